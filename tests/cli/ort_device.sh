#!/usr/bin/env bash
# onnxruntime as a device of run and compare (runner/ort/): `--device onnxruntime[:LEVEL]` runs
# the model in onnxruntime's CPU library, opened at run time. Its outputs match the reference
# runner's on the test models and real ones at every level; a bad level, a missing library and
# the flags that have no meaning there are one line, exit 2; and the known departure of
# onnxruntime 1.30 on float16 peak picking (docs/runtime_departures.md) makes compare exit 1
# naming `scores`, and --per-layer name where it starts.
#
# Environment: ONNXTOOL; ONNXTOOL_ORT_LIBRARY (default: onnxruntime-node's library in the cache,
# testdata/fetch_models.sh); the real models.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ORT_LIB=${ONNXTOOL_ORT_LIBRARY:-$CACHE_DIR/ort/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1}
needs_file "$ORT_LIB" "$SOURCE_DIR/testdata/tiny_cnn.onnx"
export ONNXTOOL_ORT_LIBRARY=$ORT_LIB
make_work ort_device
CNN=$SOURCE_DIR/testdata/tiny_cnn.onnx
PEAKS=$SOURCE_DIR/testdata/runtime_departures/ort_fp16_peak_picking

# --- run: the device named, every level, outputs within run --expect's tolerance of the CPU's
"$ONNXTOOL" run "$CNN" --random --output-dir "$WORK/cpu" >/dev/null 2>"$WORK/stderr" || fail "run on cpu: $(cat "$WORK/stderr")"
expect_tool "run --device onnxruntime (level disabled by default)" 0 "onnxruntime:disabled (onnxruntime 1." -- \
  run "$CNN" --random --device onnxruntime --expect "$WORK/cpu"
for level in disabled basic extended all; do
  expect_tool "run --device onnxruntime:$level" 0 "level $level" -- \
    run "$CNN" --random --device "onnxruntime:$level" --expect "$WORK/cpu"
done
expect_tool "run --device onnxruntime --outputs of an intermediate value" 0 "" -- \
  run "$CNN" --random --device onnxruntime --outputs relu1_out,probs
# --dump-dir sees every intermediate value (through the copy whose values are all outputs).
expect_tool "run --device onnxruntime --dump-dir" 0 "dumped 6 values" -- \
  run "$CNN" --random --device onnxruntime --dump-dir "$OUT/dump"
expect_tool "run --device onnxruntime --json" 0 '"device": "onnxruntime:disabled"' -- \
  run "$CNN" --random --device onnxruntime --json
if [[ -f $SOURCE_DIR/testdata/tiny_if.onnx ]]; then
  "$ONNXTOOL" run "$SOURCE_DIR/testdata/tiny_if.onnx" --random --output-dir "$WORK/if_cpu" >/dev/null 2>"$WORK/stderr" ||
    fail "run tiny_if on cpu: $(cat "$WORK/stderr")"
  expect_tool "run tiny_if (If) on onnxruntime:all" 0 "" -- \
    run "$SOURCE_DIR/testdata/tiny_if.onnx" --random --device onnxruntime:all --expect "$WORK/if_cpu"
fi

# --- one line, exit 2
expect_tool "a bad level" 2 "onnxruntime:fast" -- run "$CNN" --random --device onnxruntime:fast
expect_tool "an empty level" 2 "onnxruntime:" -- run "$CNN" --random --device onnxruntime:
expect "a missing library" 2 "/nonexistent/libonnxruntime.so.1" -- \
  env ONNXTOOL_ORT_LIBRARY=/nonexistent/libonnxruntime.so.1 "$ONNXTOOL" run "$CNN" --random --device onnxruntime
expect "a missing library in compare" 2 "/nonexistent/libonnxruntime.so.1" -- \
  env ONNXTOOL_ORT_LIBRARY=/nonexistent/libonnxruntime.so.1 "$ONNXTOOL" compare "$CNN" --device-a cpu --device-b onnxruntime
expect_tool "run --profile on onnxruntime" 2 "--profile" -- run "$CNN" --random --device onnxruntime --profile
expect_tool "quantize calibrating on onnxruntime" 2 "onnxruntime" -- \
  quantize "$CNN" -o "$OUT/q.onnx" --mode static --device onnxruntime
expect_tool "verification on onnxruntime" 2 "onnxruntime" -- \
  optimize "$CNN" -o "$OUT/o.onnx" --device onnxruntime

# --- compare: the reference runner against onnxruntime
expect_tool "compare tiny_cnn cpu vs onnxruntime" 0 "" -- compare "$CNN" --device-a cpu --device-b onnxruntime --samples 3
expect_tool "compare tiny_cnn cpu vs onnxruntime:all --per-layer" 0 "" -- \
  compare "$CNN" --device-a cpu --device-b onnxruntime:all --per-layer
expect_tool "compare A B, B on onnxruntime" 0 "" -- compare "$CNN" "$CNN" --device-b onnxruntime:extended
expect_tool "compare onnxruntime's levels" 0 "" -- \
  compare "$CNN" --device-a onnxruntime:disabled --device-b onnxruntime:all
for spec in "ch_ppocr_mobile_v2.0_cls_infer x=1,3,48,192" "ch_PP-OCRv4_det_infer x=1,3,96,128"; do
  read -r name shape <<<"$spec"
  if [[ ! -f $MODELS/$name.onnx ]]; then
    missing_data "$MODELS/$name.onnx"
    continue
  fi
  for level in disabled all; do
    expect_tool "compare $name cpu vs onnxruntime:$level" 0 "" -- \
      compare "$MODELS/$name.onnx" --input-shape "$shape" --device-a cpu --device-b "onnxruntime:$level"
  done
done
if [[ -f $MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx ]]; then
  # Every intermediate value onnxruntime gives back is compared: cls has over a hundred.
  expect_tool "compare cls cpu vs onnxruntime --per-layer" 0 "" -- \
    compare "$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx" --input-shape x=1,3,48,192 --device-a cpu \
    --device-b onnxruntime --per-layer
  matched=$(grep -oE '^[0-9]+ intermediate tensors matched' "$WORK/stdout" | cut -d' ' -f1)
  [[ ${matched:-0} -ge 100 ]] && ok || fail "cls --per-layer on onnxruntime: ${matched:-no} intermediate tensors matched"
fi

# --- the known departure: float16 peak picking, whose 463 peaks onnxruntime 1.30 does not find
if [[ -f $PEAKS/model.onnx ]]; then
  expect_tool "float16 peak picking: onnxruntime departs on scores" 1 "scores" -- \
    compare "$PEAKS/model.onnx" --input "logits=$PEAKS/inputs/logits.npy" --device-a cpu --device-b onnxruntime
  expect_tool "float16 peak picking at level all" 1 "scores" -- \
    compare "$PEAKS/model.onnx" --input "logits=$PEAKS/inputs/logits.npy" --device-a cpu --device-b onnxruntime:all
  # Per layer, the outputs still come from the model as written: in the copy whose every value is
  # an output, onnxruntime keeps the rounding it drops otherwise, and the values before scores agree.
  expect_tool "float16 peak picking --per-layer" 1 "scores" -- \
    compare "$PEAKS/model.onnx" --input "logits=$PEAKS/inputs/logits.npy" --device-a cpu --device-b onnxruntime --per-layer
  grep -q "^first beyond tolerance: tensor scores " "$WORK/stdout" && ok ||
    fail "peak picking --per-layer does not name scores first: $(head -c 300 "$WORK/stdout")"
  # The workaround the docs give (peak picking kept float32) passes.
  expect_tool "float16 peak picking, the workaround" 0 "" -- \
    compare "$PEAKS/workaround.onnx" --input "logits=$PEAKS/inputs/logits.npy" --device-a cpu --device-b onnxruntime
else
  missing_data "$PEAKS/model.onnx"
fi

finish
