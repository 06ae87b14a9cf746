#!/usr/bin/env bash
# `onnxtool convert --to-fp16 / --to-fp32`: the real models judged by onnxruntime-node
# (tests/ort/precision_vs_ort.py: cosine to fp32, the way back within 1e-2, check, file size),
# and the bad inputs: nothing to convert (exit 2, one line, no file), exclusive flags, input
# untouched.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MODEL=$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx
needs_file "$MODEL"
needs_python onnx numpy
make_work precision
before=$(sha256sum "$MODEL")

expect_tool "to fp16" 0 "" -- convert "$MODEL" -o "$WORK/half.onnx" --to-fp16 --keep-io-types
"$ONNXTOOL" convert "$MODEL" -o "$WORK/half_plain.onnx" --to-fp16 >/dev/null 2>&1
expect_tool "fp16 model to fp16" 2 "" -- convert "$WORK/half_plain.onnx" -o "$OUT/m.onnx" --to-fp16
grep -q "nothing to convert" "$WORK/stderr" && ok || fail "no 'nothing to convert' for an fp16 model: $(cat "$WORK/stderr")"
expect_tool "fp32 model to fp32" 2 "" -- convert "$MODEL" -o "$OUT/m.onnx" --to-fp32
expect_tool "--no-preprocess alone" 2 "" -- convert "$MODEL" -o "$OUT/m.onnx" --no-preprocess
expect_tool "--block-ops with --to-fp32" 2 "" -- convert "$MODEL" -o "$OUT/m.onnx" --to-fp32 --block-ops Conv
expect_tool "back to fp32" 0 "" -- convert "$WORK/half.onnx" -o "$WORK/back.onnx" --to-fp32
"$ONNXTOOL" check "$WORK/back.onnx" >/dev/null 2>&1 && ok || fail "the fp32 model does not pass check"
# The round trip computes what the original does, up to float16 weights (onnxtool's runner).
"$ONNXTOOL" compare "$MODEL" "$WORK/back.onnx" --random --seed 4 --input-shape x=1,3,48,192 --rtol 1e-2 --atol 1e-3 >"$WORK/cmp" 2>&1 &&
  ok || fail "the fp32 round trip drifted: $(head -2 "$WORK/cmp")"
[[ $(sha256sum "$MODEL") == "$before" ]] && ok || fail "the input model changed"

if has_ort; then
  "$PYTHON" "$SOURCE_DIR/tests/ort/precision_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" >"$WORK/ort.log" 2>&1
  if judged $?; then
    ok
  else
    fail "fp16/fp32 conversions against onnxruntime:"
  fi
  cat "$WORK/ort.log"
else
  missing_data "onnxruntime-node: the onnxruntime checks"
fi
finish
