#!/usr/bin/env bash
# onnxruntime's com.microsoft::DynamicQuantizeLSTM (8-bit W and R, written by onnxruntime's
# dynamic quantizer) against onnxruntime-node: one-node models over directions, int8 and uint8
# weights, per-direction and per-column scales, biases, initial states, sequence_lens, peepholes
# and clip (rtol 1e-4, atol 1e-5: both quantize X and H the same way and sum in integers), and
# ddddocr's older recognizer (ConvInteger and DynamicQuantizeLinear layers before its LSTM) on
# random images (cosine >= 0.9999; its rounding ties may fall differently in the convolution
# layers). Weights onnxruntime refuses (an int8 zero point that is not 0) are refused naming the
# node.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
needs_ort
make_work qlstm

# name direction wtype scales extras
cases="fwd_int8_tensor forward int8 tensor -
rev_uint8_column reverse uint8 column bias
bi_int8_column bidirectional int8 column bias,states,lens
bi_uint8_tensor bidirectional uint8 tensor bias,peephole,clip
fwd_uint8_column_states forward uint8 column states"

"$PYTHON" - "$WORK" "$cases" <<'EOF' || { echo "FAIL: could not write the models"; exit 1; }
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

work, cases = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(3)
seq, batch, inp, hid = 7, 3, 10, 12
for line in cases.strip().split("\n"):
    name, direction, wtype, scales, extras = line.split()
    extras = extras.split(",")
    dirs = 2 if direction == "bidirectional" else 1
    np_t, t = (np.int8, TensorProto.INT8) if wtype == "int8" else (np.uint8, TensorProto.UINT8)
    lo, hi = (-127, 127) if wtype == "int8" else (0, 255)
    nscale = 4 * hid if scales == "column" else 1
    shape_s = [dirs, nscale] if scales == "column" else [dirs]
    zero = 0 if wtype == "int8" else 128
    inits = [
        numpy_helper.from_array(rng.integers(lo, hi + 1, (dirs, inp, 4 * hid)).astype(np_t), "W"),
        numpy_helper.from_array(rng.integers(lo, hi + 1, (dirs, hid, 4 * hid)).astype(np_t), "R"),
        numpy_helper.from_array(rng.uniform(0.002, 0.01, shape_s).astype(np.float32), "W_scale"),
        numpy_helper.from_array(np.full(shape_s, zero, np_t), "W_zero_point"),
        numpy_helper.from_array(rng.uniform(0.002, 0.01, shape_s).astype(np.float32), "R_scale"),
        numpy_helper.from_array(np.full(shape_s, zero, np_t), "R_zero_point"),
    ]
    ins = ["X", "W", "R", "", "", "", "", "", "W_scale", "W_zero_point", "R_scale", "R_zero_point"]
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, batch, inp])]
    if "bias" in extras:
        inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, (dirs, 8 * hid)).astype(np.float32), "B"))
        ins[3] = "B"
    if "lens" in extras:
        inits.append(numpy_helper.from_array(np.array([7, 4, 1], np.int32), "sequence_lens"))
        ins[4] = "sequence_lens"
    if "states" in extras:
        ins[5], ins[6] = "initial_h", "initial_c"
        graph_inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [dirs, batch, hid]) for n in ins[5:7]]
    if "peephole" in extras:
        inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, (dirs, 3 * hid)).astype(np.float32), "P"))
        ins[7] = "P"
    attrs = {"hidden_size": hid, "direction": direction}
    if "clip" in extras:
        attrs["clip"] = 0.75
    node = helper.make_node("DynamicQuantizeLSTM", ins, ["Y", "Y_h", "Y_c"], name="qlstm_" + name, domain="com.microsoft", **attrs)
    outs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [seq, dirs, batch, hid]),
            helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [dirs, batch, hid]),
            helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, [dirs, batch, hid])]
    graph = helper.make_graph([node], name, graph_inputs, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 7
    d = os.path.join(work, name)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "X.npy"), (rng.standard_normal((seq, batch, inp)) * 2).astype(np.float32))
    for n in ins[5:7]:
        if n:
            np.save(os.path.join(d, n + ".npy"), rng.uniform(-0.5, 0.5, (dirs, batch, hid)).astype(np.float32))
    if name == "fwd_int8_tensor":  # the same model with an int8 zero point onnxruntime refuses
        inits[3] = numpy_helper.from_array(np.full(shape_s, 3, np_t), "W_zero_point")
        graph = helper.make_graph([node], name, graph_inputs, outs, inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
        model.ir_version = 7
        onnx.save(model, os.path.join(work, "bad_zero_point.onnx"))
EOF

while read -r name _; do
  d=$WORK/$name
  feeds=()
  for f in "$d"/*.npy; do feeds+=(--input "$(basename "$f" .npy)=$f"); done
  expect_tool "$name: check" 0 "valid (0 errors, 0 warnings)" -- check "$d/model.onnx"
  NODE_PATH=$CACHE_DIR/ort/node_modules node "$ORT_RUN" "$d/model.onnx" "${feeds[@]}" --output-dir "$d/ort" \
    >/dev/null 2>"$d/ort.err" || { fail "$name: onnxruntime did not run it: $(tail -n 1 "$d/ort.err")"; continue; }
  expect_tool "$name: matches onnxruntime" 0 "" -- run "$d/model.onnx" "${feeds[@]}" --expect "$d/ort" --rtol 1e-4 --atol 1e-5 --quiet
done <<<"$cases"

expect_tool "int8 weights with a zero point of 3: refused" 1 "qlstm_fwd_int8_tensor" -- \
  run "$WORK/bad_zero_point.onnx" --random --quiet

# The real model: ddddocr's older recognizer, as its npm package ships it.
model=$MODELS/ddddocr_common_old.onnx
if [[ -f $model ]]; then
  "$PYTHON" -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(5).random((1, 1, 64, 160)).astype(np.float32))" \
    "$WORK/image.npy"
  if NODE_PATH=$CACHE_DIR/ort/node_modules node "$ORT_RUN" "$model" --input "input1=$WORK/image.npy" --output-dir "$WORK/real_ort" \
    >/dev/null 2>"$WORK/ort.err"; then
    expect_tool "ddddocr common_old: cosine >= 0.9999 against onnxruntime" 0 "" -- \
      compare "$model" --input "input1=$WORK/image.npy" --expect "$WORK/real_ort" --min-cosine 0.9999 --quiet
  else
    fail "ddddocr common_old: onnxruntime did not run it: $(tail -n 1 "$WORK/ort.err")"
  fi
else
  missing_data "$model"
fi

finish
