#!/usr/bin/env bash
# The Llama-style decoder of bench/make_decoder.py (2 layers, hidden 64) in its decomposed,
# opset-23 fused and com.microsoft forms: a prefill and a decode step with the KV cache, onnxtool
# against onnxruntime-node and the forms against each other (tests/ort/decoder_vs_ort.py). Then
# the com.microsoft form quantized to 4-bit MatMulNBits, measured on random inputs shaped as a
# prefill, and the result run on both the runner and onnxruntime's library (`compare --device-b
# onnxruntime`); quantize's "file" line counts the input's external data.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_ort
needs_python numpy onnx
ORT_LIB=${ONNXTOOL_ORT_LIBRARY:-$CACHE_DIR/ort/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1}
needs_file "$ORT_LIB"
export ONNXTOOL_ORT_LIBRARY=$ORT_LIB
make_work decoder

"$PYTHON" "$SOURCE_DIR/tests/ort/decoder_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" >"$WORK/judge.log" 2>&1
if judged $?; then ok; else fail "the decoder against onnxruntime:"; fi
cat "$WORK/judge.log"

M=$WORK/ms.onnx
"$PYTHON" "$SOURCE_DIR/bench/make_decoder.py" "$M" --form microsoft --hidden 128 --heads 4 --kv-heads 2 >/dev/null ||
  fail "make_decoder.py --form microsoft"
# A prefill of 16 tokens: the mask all ones (GroupQueryAttention reads the lengths from it), the
# cache empty.
shape=(--input-range attention_mask=1,1 --input-range input_ids=0,255 --input-shape input_ids=1,16
       --input-shape attention_mask=1,16)
for l in 0 1; do for k in key value; do shape+=(--input-shape "past_key_values.$l.$k=1,2,0,32"); done; done
expect_tool "4-bit MatMulNBits on the decoder" 0 "attention_mask = 1; input_ids in [0, 255)" -- \
  quantize "$M" -o "$WORK/q4.onnx" --mode weight-only --bits 4 --format matmulnbits "${shape[@]}" --json
stored=$(($(stat -c %s "$M") + $(stat -c %s "$M.data")))
"$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["file_bytes"]["before"] == int(sys.argv[2]), (d["file_bytes"], sys.argv[2])
assert d["quantized_nodes"] == 15, d["quantized_nodes"]
' "$WORK/stdout" "$stored" && ok || fail "quantize's JSON: the input's bytes (with its external data, $stored) or the node count"
# Weight-only mode keeps MatMuls in float to reach its accuracy target like the other modes, and
# takes the flags that set it.
expect_tool "weight-only --no-auto-exclude --accuracy-target" 0 "" -- quantize "$M" -o "$WORK/q4all.onnx" \
  --mode weight-only --bits 4 --no-auto-exclude --accuracy-target 0.999 "${shape[@]}"
expect_tool "the 4-bit decoder: runner vs onnxruntime" 0 "within tolerance" -- \
  compare "$WORK/q4.onnx" --device-a cpu --device-b onnxruntime --random "${shape[@]}"
finish
