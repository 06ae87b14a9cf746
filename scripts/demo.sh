#!/usr/bin/env bash
# The demo: builds onnxtool, then inspects, checks and converts the bundled testdata/tiny_cnn.onnx,
# and shows that moving its weights to external data and back gives the same bytes as a plain
# re-save. ONNXTOOL_BUILD_DIR picks the build directory (default build).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

build_dir="${ONNXTOOL_BUILD_DIR:-build}"
scripts/build.sh --build-dir "$build_dir"
onnxtool="$build_dir/onnxtool"
model="testdata/tiny_cnn.onnx"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

heading() {
  echo
  echo "== $*"
}

heading "onnxtool inspect $model"
"$onnxtool" inspect "$model"

heading "onnxtool inspect --json $model"
"$onnxtool" inspect --json "$model"

heading "onnxtool check $model"
# The demo model is valid: check must say so (exit 0).
"$onnxtool" check "$model"

heading "onnxtool convert --infer-shapes: inferred types and shapes stored as value_info"
"$onnxtool" convert "$model" -o "$work/inferred.onnx" --infer-shapes

heading "onnxtool convert --external-data --size-threshold 256: weights of 256 bytes or more to a side file"
"$onnxtool" convert "$model" -o "$work/external.onnx" --external-data --size-threshold 256
ls -l "$work"

heading "onnxtool inspect of the external-data model"
"$onnxtool" inspect "$work/external.onnx"

heading "onnxtool convert --inline-external-data: the weights back into the model file"
"$onnxtool" convert "$work/external.onnx" -o "$work/inlined.onnx" --inline-external-data

heading "onnxtool convert (plain re-save of the original) and cmp with the round trip"
"$onnxtool" convert "$model" -o "$work/plain.onnx"
cmp "$work/plain.onnx" "$work/inlined.onnx"
echo "identical: external data out and back in gives the same bytes as a plain re-save"
