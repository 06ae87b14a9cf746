#!/usr/bin/env bash
# onnxruntime's own operators of the ai.onnx domain, which its optimizer writes into models
# (ir/ops/onnxruntime_schemas.def): LayerNormalization below opset 17 and
# SimplifiedLayerNormalization. One-node models over axis, epsilon, the optional outputs and
# mixed X/Scale types: `check` must warn node.onnxruntime-op (an error with --strict) and
# nothing else, `run` must match onnxruntime-node's outputs (rtol 1e-4, atol 1e-5; the statistic
# outputs too), and what onnxtool cannot compute exactly is refused with one line naming the
# node. At opset 17 LayerNormalization is ONNX's own and no warning is given.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
needs_ort
make_work ortops

# name op opset axis epsilon outputs x_type scale_type  (types: float, double, float16)
cases="ln13_last LayerNormalization 13 -1 1e-5 3 float float
ln13_axis1 LayerNormalization 13 1 1e-3 1 float float
ln16_double LayerNormalization 16 -2 1e-5 2 double double
sln14_last SimplifiedLayerNormalization 14 -1 1e-6 1 float float
sln14_invstd SimplifiedLayerNormalization 14 -1 1e-5 2 float float
sln14_axis0 SimplifiedLayerNormalization 14 0 1e-5 2 float float
sln14_half_scale SimplifiedLayerNormalization 14 -1 1e-5 1 float16 float
ln17_standard LayerNormalization 17 -1 1e-5 1 float float"

"$PYTHON" - "$WORK" "$cases" <<'EOF' || { echo "FAIL: could not write the models"; exit 1; }
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper

work, cases = sys.argv[1], sys.argv[2]
types = {"float": (TensorProto.FLOAT, np.float32), "double": (TensorProto.DOUBLE, np.float64),
         "float16": (TensorProto.FLOAT16, np.float16)}
rng = np.random.default_rng(7)
for line in cases.strip().split("\n"):
    name, op, opset, axis, eps, outputs, xt, st = line.split()
    opset, axis, outputs = int(opset), int(axis), int(outputs)
    shape = [2, 3, 8]
    norm = shape[axis:]
    x_type, x_np = types[xt]
    s_type, s_np = types[st]
    outs = ["y", "mean", "inv"][:outputs] if op == "LayerNormalization" else ["y", "inv"][:outputs]
    inputs = ["x", "scale"] + (["bias"] if op == "LayerNormalization" else [])
    node = helper.make_node(op, inputs, outs, name="norm_" + name, axis=axis, epsilon=float(eps))
    stat = [d if i < (axis % 3) else 1 for i, d in enumerate(shape)]
    value_outs = [helper.make_tensor_value_info("y", s_type, shape)]
    value_outs += [helper.make_tensor_value_info(o, TensorProto.FLOAT, stat) for o in outs[1:]]  # stash_type 1
    inits = [helper.make_tensor("scale", s_type, norm, rng.uniform(0.5, 1.5, norm).astype(s_np).ravel().tolist())]
    if op == "LayerNormalization":
        inits.append(helper.make_tensor("bias", s_type, norm, rng.uniform(-1, 1, norm).astype(s_np).ravel().tolist()))
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", x_type, shape)], value_outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    d = os.path.join(work, name)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "x.npy"), (rng.standard_normal(shape) * 3 + 1).astype(x_np))
EOF

while read -r name op opset _; do
  d=$WORK/$name
  if [[ $name == ln17_standard ]]; then
    expect_tool "$name: check" 0 "valid (0 errors, 0 warnings)" -- check "$d/model.onnx"
  else
    expect_tool "$name: check" 0 "node.onnxruntime-op" -- check "$d/model.onnx"
    grep -q "valid (0 errors, 1 warning)" "$WORK/stdout" && ok || fail "$name: check: $(tail -n 1 "$WORK/stdout")"
    "$ONNXTOOL" check --strict "$d/model.onnx" >"$WORK/stdout" 2>&1
    [[ $? -eq 1 ]] && grep -q "^error node.onnxruntime-op" "$WORK/stdout" && ok ||
      fail "$name: check --strict: $(head -c 300 "$WORK/stdout")"
  fi
  NODE_PATH=$CACHE_DIR/ort/node_modules node "$ORT_RUN" "$d/model.onnx" --input "x=$d/x.npy" --output-dir "$d/ort" \
    >/dev/null 2>"$d/ort.err" || { fail "$name: onnxruntime did not run it: $(tail -n 1 "$d/ort.err")"; continue; }
  expect_tool "$name: run" 0 "" -- run "$d/model.onnx" --input "x=$d/x.npy" --output-dir "$d/ours" --quiet
  expect_tool "$name: matches onnxruntime" 0 "" -- run "$d/model.onnx" --input "x=$d/x.npy" --expect "$d/ort" \
    --rtol 1e-4 --atol 1e-5 --quiet
done <<<"$cases"

# X and Scale of different types in LayerNormalization-1: onnxruntime's Y takes Scale's type,
# which onnxtool's kernel does not do: refused, naming the node.
"$PYTHON" - "$WORK/mixed.onnx" <<'EOF'
import sys
import numpy as np
from onnx import TensorProto, helper, save
node = helper.make_node("LayerNormalization", ["x", "scale"], ["y"], name="mixed_norm")
graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor("scale", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 7
save(model, sys.argv[1])
EOF
expect_tool "X float16, Scale float: refused" 1 "mixed_norm" -- run "$WORK/mixed.onnx" --random --quiet

finish
