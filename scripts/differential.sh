#!/usr/bin/env bash
# The long differential run: generated models of other seeds than ctest's 1-2000 through every
# rewriting path, judged by onnxtool's runner and onnxruntime (see tests/differential/).
#
#   scripts/differential.sh [FIRST [COUNT]]   seeds FIRST..FIRST+COUNT-1 (default 2001, 20000)
#
# A failing seed is minimized into .cache/differential/minimized/ (left out blocks one at a time
# while it still fails): copy the file to testdata/regressions/ once the bug is fixed. Needs a
# Release build (scripts/build.sh) and onnxruntime-node (testdata/fetch_models.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
first=${1:-2001}
count=${2:-20000}
build="$root/${ONNXTOOL_BUILD_DIR:-build}"
[[ -x $build/onnxtool_differential ]] || { echo "differential.sh: build first (scripts/build.sh)" >&2; exit 2; }
export ONNXTOOL_CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$root/.cache}
mkdir -p "$ONNXTOOL_CACHE_DIR/differential"
exec "$build/onnxtool_differential" --seeds "$first-$((first + count - 1))" --ort "$root/tests/ort/ort_run.js" \
  --minimize "$ONNXTOOL_CACHE_DIR/differential/minimized"
