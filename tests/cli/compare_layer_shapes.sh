#!/usr/bin/env bash
# compare --per-layer matches intermediate values by name; a rewrite may reuse a name for a value
# of another layout (onnxruntime's transpose optimizer does). Such a pair is not the same value:
# it is listed as not compared, never as the first divergence, and the outputs still decide.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx
make_work layer_shapes

"$PYTHON" - "$WORK" <<'PY' || { echo "FAIL: could not write the models"; exit 1; }
import sys
from onnx import TensorProto, helper, save
work = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 2])
# A: t = transpose(x) [1,3,2], y = relu(t). B: t = relu(x) [1,2,3], y = transpose(t): same y.
a = helper.make_graph([helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
                       helper.make_node("Relu", ["t"], ["y"])], "a", [x], [y])
b = helper.make_graph([helper.make_node("Relu", ["x"], ["t"]),
                       helper.make_node("Transpose", ["t"], ["y"], perm=[0, 2, 1])], "b", [x], [y])
for name, g in (("a", a), ("b", b)):
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    save(m, f"{work}/{name}.onnx")
PY

expect_tool "same outputs, a namesake of another shape: passes" 0 "share a name with a value of B of another shape" -- \
  compare "$WORK/a.onnx" "$WORK/b.onnx" --per-layer
grep -q "first beyond tolerance" "$WORK/stdout" && fail "the namesake was reported as a divergence: $(cat "$WORK/stdout")" || ok
finish
