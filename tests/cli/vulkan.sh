#!/usr/bin/env bash
# The Vulkan device through the CLI (issue 17): `devices` lists it (text and JSON), `run
# --device vulkan` names the nodes that ran on the CPU, `compare MODEL --device-a cpu --device-b
# vulkan` agrees on the backend suite's cases and on the real models, and every device failure
# is one line with exit 2 and nothing written: an unknown device or index, no loader, no driver,
# a pipeline that fails to build, a lost device;
# a model beyond the device's memory is one line with exit 1.
# The validation layer is on unless ONNXTOOL_VULKAN_VALIDATION=0 (the sanitizer stage of
# scripts/test.sh): any message it prints fails the command that caused it.
#
# Environment: ONNXTOOL (the binary). Needs a Vulkan device (Mesa's lavapipe: scripts/build.sh
# installs it) and the backend suite; the real models when fetched.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_work vulkan
export ONNXTOOL_VULKAN_VALIDATION="${ONNXTOOL_VULKAN_VALIDATION:-1}"
"$ONNXTOOL" devices --json >"$WORK/devices.json" 2>"$WORK/devices.err" || fail "devices --json: exit $?"
grep -q '"vulkan:0"' "$WORK/devices.json" || skip_all "a Vulkan device (Debian: mesa-vulkan-drivers)"
ok
expect_tool "devices lists the CPU and vulkan:0" 0 "vulkan:0" -- devices
needs_file "$BACKEND/node/test_relu/model.onnx"
N=$BACKEND/node

# run on the device: outputs, and the placement line / JSON.
expect_tool "run --device vulkan" 0 "1 node(s) on the device, none on the CPU" -- \
  run "$N/test_relu/model.onnx" --inputs "$N/test_relu/test_data_set_0" --device vulkan
expect_tool "run --device vulkan --json" 0 '"device_nodes": 1' -- \
  run "$N/test_relu/model.onnx" --inputs "$N/test_relu/test_data_set_0" --device vulkan:0 --json
# A node the device declines runs on the CPU and is named with the reason.
expect_tool "run names CPU nodes" 0 "1 on the CPU: Add (uint8 input 0" -- \
  run "$N/test_add_uint8/model.onnx" --inputs "$N/test_add_uint8/test_data_set_0" --device vulkan
# Output files on the device equal the CPU's bytes for an exact op.
"$ONNXTOOL" run "$N/test_relu/model.onnx" --inputs "$N/test_relu/test_data_set_0" --output-dir "$WORK/cpu" >/dev/null
"$ONNXTOOL" run "$N/test_relu/model.onnx" --inputs "$N/test_relu/test_data_set_0" --device vulkan --output-dir "$WORK/gpu" >/dev/null
if cmp -s "$WORK/cpu/y.npy" "$WORK/gpu/y.npy"; then ok; else fail "Relu on vulkan differs from the CPU"; fi

# compare one model on two devices.
for t in test_relu test_add_bcast test_sigmoid test_pow; do
  [[ -f $N/$t/model.onnx ]] || { missing_data "$N/$t/model.onnx"; continue; }
  expect_tool "compare $t cpu vs vulkan" 0 "within tolerance" -- \
    compare "$N/$t/model.onnx" --inputs "$N/$t/test_data_set_0" --device-a cpu --device-b vulkan --rtol 1e-4
done
# Gelu came in opset 20, after the backend suite (1.12): make_opset_cases writes its cases.
MAKE_CASES=$(dirname "$ONNXTOOL")/make_opset_cases
if "$MAKE_CASES" "$WORK/opset_cases" >/dev/null; then
  for t in Gelu_20 Gelu_20_tanh; do
    expect_tool "compare $t cpu vs vulkan" 0 "within tolerance" -- \
      compare "$WORK/opset_cases/$t/model.onnx" --inputs "$WORK/opset_cases/$t/inputs" --device-a cpu --device-b vulkan --rtol 1e-4
  done
else
  fail "$MAKE_CASES $WORK/opset_cases failed"
fi
expect_tool "compare --per-layer across devices" 0 "intermediate tensors matched" -- \
  compare "$N/test_relu/model.onnx" --random --device-a cpu --device-b vulkan --per-layer
expect_tool "compare one model on one device" 2 "two devices" -- compare "$N/test_relu/model.onnx" --device-a cpu --device-b cpu

# Real models end to end: float32 within rtol 1e-4 of the CPU (atol 1e-4 for outputs near zero),
# and converted to float16 with float32 inputs and outputs: with float32 arithmetic on both
# devices (vulkan:0:fp32-arithmetic; each op's output rounded to float16) within rtol 2e-3, atol
# 2e-3 (two float16 ulps); with the device's float16 arithmetic (float16 sums in MatMul, Gemm,
# Conv and ConvTranspose; lavapipe has it) within rtol 5e-2, atol 5e-2 (measured: at most 0.024): a float16 sum of K products
# drifts by up to K ulps of its partial sums, and these models sum up to K = 2304.
real() {
  local name=$1
  shift
  [[ -f $MODELS/$name.onnx ]] || { missing_data "$MODELS/$name.onnx"; return; }
  expect_tool "compare $name cpu vs vulkan" 0 "within tolerance" -- \
    compare "$MODELS/$name.onnx" --device-a cpu --device-b vulkan --rtol 1e-4 --atol 1e-4 "$@"
  grep -h "^B: " "$WORK/stdout" | sed "s/^/  $name: /"
  if "$ONNXTOOL" convert "$MODELS/$name.onnx" -o "$WORK/$name.fp16.onnx" --to-fp16 --keep-io-types --no-verify >/dev/null 2>"$WORK/convert.err"; then
    expect_tool "compare $name float16 cpu vs vulkan, float32 arithmetic" 0 "within tolerance" -- \
      compare "$WORK/$name.fp16.onnx" --device-a cpu --device-b vulkan:0:fp32-arithmetic --rtol 2e-3 --atol 2e-3 "$@"
    grep -h "^B: " "$WORK/stdout" | sed "s/^/  $name float16: /"
    expect_tool "compare $name float16 cpu vs vulkan, float16 arithmetic" 0 "within tolerance" -- \
      compare "$WORK/$name.fp16.onnx" --device-a cpu --device-b vulkan --rtol 5e-2 --atol 5e-2 "$@"
    grep -h "^B: " "$WORK/stdout" | sed "s/^/  $name float16 arithmetic: /"
  else
    fail "$name: convert --to-fp16: $(cat "$WORK/convert.err")"
  fi
}
real ch_ppocr_mobile_v2.0_cls_infer --input-shape x=1,3,48,192
real ch_PP-OCRv4_rec_infer --input-shape x=1,3,48,160
real ch_PP-OCRv4_det_infer --input-shape x=1,3,96,128
if has_python numpy; then
  for m in silero_vad_legacy silero_vad_v5 silero_vad_v6; do
    mkdir -p "$WORK/vad_$m"
    "$PYTHON" "$SOURCE_DIR/tests/make_vad_feed.py" "$WORK/vad_$m" "$m"
    real "$m" --inputs "$WORK/vad_$m"
  done
else
  missing_data "$PYTHON with numpy (the Silero inputs)"
fi

# Device failures: one line, exit 2, nothing written.
expect_tool "unknown device" 2 "unknown device 'gpu'" -- run "$N/test_relu/model.onnx" --random --device gpu --output-dir "$OUT/o"
expect_tool "unknown index" 2 "no Vulkan device 9" -- run "$N/test_relu/model.onnx" --random --device vulkan:9 --output-dir "$OUT/o"
expect_tool "bad index syntax" 2 "unknown device 'vulkan:x'" -- run "$N/test_relu/model.onnx" --random --device vulkan:x
expect "no loader" 2 "no Vulkan loader" -- env ONNXTOOL_VULKAN_LOADER=/nonexistent/libvulkan.so.1 \
  "$ONNXTOOL" run "$N/test_relu/model.onnx" --random --device vulkan --output-dir "$OUT/o"
expect "no driver" 2 "no Vulkan driver" -- env VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json \
  "$ONNXTOOL" run "$N/test_relu/model.onnx" --random --device vulkan --output-dir "$OUT/o"
expect "devices without a loader" 0 "no Vulkan device: no Vulkan loader" -- env ONNXTOOL_VULKAN_LOADER=/nonexistent/lib.so \
  "$ONNXTOOL" devices
expect "CPU runs without a loader" 0 "y: float[3,4,5]" -- env ONNXTOOL_VULKAN_LOADER=/nonexistent/lib.so \
  "$ONNXTOOL" run "$N/test_relu/model.onnx" --inputs "$N/test_relu/test_data_set_0"
# A device smaller than the model (ONNXTOOL_VULKAN_MEMORY_LIMIT caps the reported memory and the
# allocations): the weights are refused before the run; activations fail at their allocation.
expect "weights beyond device memory" 1 "of device memory); run it on the CPU" -- env ONNXTOOL_VULKAN_MEMORY_LIMIT=1000 \
  "$ONNXTOOL" run "$SOURCE_DIR/testdata/tiny_cnn.onnx" --random --device vulkan --output-dir "$OUT/o"
expect "activations beyond device memory" 1 "out of memory (allocating" -- env ONNXTOOL_VULKAN_MEMORY_LIMIT=100 \
  "$ONNXTOOL" run "$N/test_relu/model.onnx" --random --device vulkan --output-dir "$OUT/o"
expect "a memory limit the device has" 0 "y: float[3,4,5]" -- env ONNXTOOL_VULKAN_MEMORY_LIMIT=100000000 \
  "$ONNXTOOL" run "$N/test_relu/model.onnx" --inputs "$N/test_relu/test_data_set_0" --device vulkan
# Driver failures on a working device (ONNXTOOL_VULKAN_FAULT provokes them): a pipeline that
# does not build and a device lost during the run are one line, exit 2, nothing written, for
# run, compare and optimize --verify alike; the input is untouched.
cp "$SOURCE_DIR/testdata/tiny_cnn.onnx" "$WORK/tiny.onnx"
before=$(sha256sum "$WORK/tiny.onnx")
expect "pipeline failure: run" 2 "building the pipeline of shader" -- env ONNXTOOL_VULKAN_FAULT=pipeline \
  "$ONNXTOOL" run "$WORK/tiny.onnx" --random --device vulkan --output-dir "$OUT/o"
expect "device lost: run" 2 "the device was lost (vkWaitForFences: VK_ERROR_DEVICE_LOST)" -- \
  env ONNXTOOL_VULKAN_FAULT=device-lost "$ONNXTOOL" run "$WORK/tiny.onnx" --random --device vulkan --output-dir "$OUT/o"
expect "device lost: compare" 2 "the device was lost" -- env ONNXTOOL_VULKAN_FAULT=device-lost \
  "$ONNXTOOL" compare "$WORK/tiny.onnx" --random --device-a cpu --device-b vulkan
expect "pipeline failure: optimize --verify" 2 "building the pipeline of shader" -- env ONNXTOOL_VULKAN_FAULT=pipeline \
  "$ONNXTOOL" optimize "$WORK/tiny.onnx" -o "$OUT/o.onnx" --device vulkan
expect "unknown fault" 2 "ONNXTOOL_VULKAN_FAULT is 'x'" -- env ONNXTOOL_VULKAN_FAULT=x \
  "$ONNXTOOL" run "$WORK/tiny.onnx" --random --device vulkan --output-dir "$OUT/o"
expect "the CPU ignores device faults" 0 "" -- env ONNXTOOL_VULKAN_FAULT=device-lost \
  "$ONNXTOOL" run "$WORK/tiny.onnx" --random --output-dir "$OUT/o"
if [[ $(sha256sum "$WORK/tiny.onnx") == "$before" ]]; then ok; else fail "a device failure changed the input"; fi
# Verification on a device runs the result there and the original on the CPU runner, never the
# device against itself: a device whose every kernel gives wrong results and exits 0 (what a
# driver's silent loop limit did; ONNXTOOL_VULKAN_FAULT=wrong-results records no dispatch) fails
# the verification of optimize, convert and edit, where the device agreeing with itself passed.
expect "a wrong device fails optimize's verification" 1 "verification failed" -- \
  env ONNXTOOL_VULKAN_FAULT=wrong-results "$ONNXTOOL" optimize "$WORK/tiny.onnx" -o "$OUT/o.onnx" --device vulkan
expect "a wrong device fails convert's verification" 1 "verification failed" -- \
  env ONNXTOOL_VULKAN_FAULT=wrong-results "$ONNXTOOL" convert "$WORK/tiny.onnx" -o "$OUT/o.onnx" --to-fp16 --device vulkan
expect "a wrong device fails edit's verification" 1 "verification failed" -- \
  env ONNXTOOL_VULKAN_FAULT=wrong-results "$ONNXTOOL" edit "$WORK/tiny.onnx" -o "$OUT/o.onnx" --producer-name x --device vulkan
expect "a right device passes optimize's verification" 0 "verified" -- \
  "$ONNXTOOL" optimize "$WORK/tiny.onnx" -o "$OUT/o.onnx" --device vulkan
expect_tool "optimize --device unknown" 2 "unknown device" -- optimize "$N/test_relu/model.onnx" -o "$OUT/o.onnx" --device tpu
expect_tool "quantize --device bad index" 2 "no Vulkan device 5" -- \
  quantize "$N/test_relu/model.onnx" -o "$OUT/q.onnx" --mode static --inputs "$N/test_relu" --device vulkan:5
finish
