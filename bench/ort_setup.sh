# Shared setup of the benchmarks that run onnxruntime-node (runner_speed.sh, quantize_speed.sh,
# optimize_speed.sh); sourced, not run. The sourcing script sets BENCH (its name, for messages)
# and RUNS first. Defines ROOT, BUILD_DIR, CACHE_DIR (exported as ONNXTOOL_CACHE_DIR), PYTHON,
# ONNXTOOL, ORT_RUN, say and die; checks RUNS; builds onnxtool when missing; fetches the pinned
# models and onnxruntime-node; makes TMP, removed on exit.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${ONNXTOOL_BUILD_DIR:-$ROOT/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$ROOT/.cache}
export ONNXTOOL_CACHE_DIR=$CACHE_DIR
PYTHON=/usr/bin/python3
ONNXTOOL=$BUILD_DIR/onnxtool
ORT_RUN=$ROOT/tests/ort/ort_run.js

say() { echo "$BENCH: $*" >&2; }
die() { say "$*"; exit 2; }

[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer, got '$RUNS'"
if [[ ! -x $ONNXTOOL ]]; then
  say "building onnxtool in $BUILD_DIR"
  "$ROOT/scripts/build.sh" --build-dir "$BUILD_DIR" >/dev/null || die "the build failed"
fi
"$ROOT/testdata/fetch_models.sh" >/dev/null || die "testdata/fetch_models.sh failed"
command -v node >/dev/null 2>&1 || die "node is not installed"
[[ -f $CACHE_DIR/ort/node_modules/onnxruntime-node/package.json ]] || die "onnxruntime-node is not installed in $CACHE_DIR/ort"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool_${BENCH%.sh}.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
