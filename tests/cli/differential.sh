#!/usr/bin/env bash
# Differential testing (tests/differential/): 2,000 generated models (seeds 1-2000) and the kept
# regression models (testdata/regressions/) through optimize, convert down and up, and the float16
# round trip; every result must agree with the original in onnxtool's runner and in onnxruntime
# (one onnxruntime-node process per 500 models). scripts/differential.sh runs other seeds.
#
# Environment: ONNXTOOL (the binary; onnxtool_differential is beside it), ONNXTOOL_SOURCE_DIR,
# ONNXTOOL_CACHE_DIR.
set -u
: "${ONNXTOOL:?set ONNXTOOL to the onnxtool binary}"
SOURCE_DIR=${ONNXTOOL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$SOURCE_DIR/tests/skip_lib.sh"
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$SOURCE_DIR/.cache}
export ONNXTOOL_CACHE_DIR=$CACHE_DIR
DIFFERENTIAL=$(dirname "$ONNXTOOL")/onnxtool_differential
[[ -x $DIFFERENTIAL ]] || { echo "FAIL: $DIFFERENTIAL is not built"; exit 1; }
command -v node >/dev/null 2>&1 || skip_all "node"
[[ -f $CACHE_DIR/ort/node_modules/onnxruntime-node/package.json ]] || skip_all "onnxruntime-node in $CACHE_DIR/ort"

failed=0
ORT=(--ort "$SOURCE_DIR/tests/ort/ort_run.js")
"$DIFFERENTIAL" --seeds 1-2000 "${ORT[@]}" || failed=$((failed + 1))
"$DIFFERENTIAL" --models "$SOURCE_DIR"/testdata/regressions/*.onnx "${ORT[@]}" || failed=$((failed + 1))
finish "$failed"
