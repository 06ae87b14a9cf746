#!/usr/bin/env bash
# Differential testing (tests/differential/): 2,000 generated models (seeds 1-2000) and the kept
# regression models (testdata/regressions/) through optimize, convert down and up, the float16
# round trip and static quantization; every result must agree with the original in onnxtool's
# runner and in onnxruntime (one onnxruntime-node process per 500 models; quantized models by
# cosine, onnxruntime on the same QDQ graph as onnxtool's runner). scripts/differential.sh runs
# other seeds. Under the sanitizers seeds 1-500 run.
#
# Environment: ONNXTOOL (the binary; onnxtool_differential is beside it), ONNXTOOL_SOURCE_DIR,
# ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
DIFFERENTIAL=$(dirname "$ONNXTOOL")/onnxtool_differential
[[ -x $DIFFERENTIAL ]] || { echo "FAIL: $DIFFERENTIAL is not built"; exit 1; }
needs_ort

seeds=1-2000
((SANITIZED)) && seeds=1-500
"$DIFFERENTIAL" --seeds "$seeds" --ort "$ORT_RUN" && ok || fail "seeds $seeds"
"$DIFFERENTIAL" --models "$SOURCE_DIR"/testdata/regressions/*.onnx --ort "$ORT_RUN" && ok || fail "testdata/regressions"
finish
