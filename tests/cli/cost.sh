#!/usr/bin/env bash
# `inspect --cost` against the published figures of two known architectures, built in torchvision's
# layout by tests/make_cost_models.py (random weights, in the scratch folder): ResNet-50 4.09 G
# MACs and 25.557 M parameters, MobileNetV2 300 M MACs, each within 1%; the parameter counts
# exactly as the generator writes them (BatchNormalization's running mean and variance
# included). Then the text report, an unknown cost for a symbolic dim, If branches counted once,
# and bad input: --cost on a model whose shapes contradict each other, --input-shape without
# --cost, an input that does not exist, dims the model contradicts (one line, exit 2).
#
# Needs Debian's python3 with python3-onnx and python3-numpy (missing: skipped).
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
make_work cost
M=$SOURCE_DIR/testdata/tiny_cnn.onnx  # image float[N,3,32,32]
"$PYTHON" "$SOURCE_DIR/tests/make_cost_models.py" "$WORK" || { fail "make_cost_models.py failed"; finish; }

# json_is LABEL FILE EXPR: the python expression over `c` (the "cost" object of FILE) is true.
json_is() {
  if "$PYTHON" -c "import json,sys; c=json.load(open(sys.argv[1]))['cost']; sys.exit(0 if ($3) else 1)" "$2" 2>/dev/null; then ok
  else fail "$1: not ($3): $("$PYTHON" -c "import json,sys; c=json.load(open(sys.argv[1]))['cost']; c.pop('nodes'); print(c)" "$2" 2>&1 | head -c 600)"; fi
}
within() { echo "abs($1 / $2 - 1) <= 0.01"; }

expect_tool "ResNet-50 --cost --json" 0 '"macs"' -- inspect "$WORK/resnet50.onnx" --cost --json
cp "$WORK/stdout" "$WORK/resnet50.json"
json_is "ResNet-50 MACs" "$WORK/resnet50.json" "$(within "c['macs']" 4.09e9)"
json_is "ResNet-50 parameters" "$WORK/resnet50.json" "$(within "c['parameters']" 25.557e6)"
json_is "ResNet-50 parameters as written" "$WORK/resnet50.json" "c['parameters'] == 25610152 and c['parameter_bytes'] == 4 * 25610152"
json_is "ResNet-50 all known" "$WORK/resnet50.json" "c['unknown_nodes'] == 0 and all(n['macs'] is not None for n in c['nodes'])"
json_is "ResNet-50 Conv share" "$WORK/resnet50.json" "c['by_op_type']['Conv']['nodes'] == 53 and c['by_op_type']['Conv']['macs_share'] > 0.99"
json_is "ResNet-50 peak" "$WORK/resnet50.json" "c['peak_activation_bytes'] and c['peak_unsized_values'] == 0"

expect_tool "MobileNetV2 --cost --json" 0 '"macs"' -- inspect "$WORK/mobilenet_v2.onnx" --cost --json
cp "$WORK/stdout" "$WORK/mobilenet_v2.json"
json_is "MobileNetV2 MACs" "$WORK/mobilenet_v2.json" "$(within "c['macs']" 300e6)"
json_is "MobileNetV2 parameters as written (the Clip bounds once)" "$WORK/mobilenet_v2.json" "c['parameters'] == 3538986"

expect_tool "text report" 0 "MACs:         4.09 G" -- inspect "$WORK/resnet50.onnx" --cost
for needle in "parameters:   25.6 M" "top 10 of " "peak memory:  " "Conv "; do
  if grep -qF -- "$needle" "$WORK/stdout"; then ok; else fail "text report: no '$needle'"; fi
done

# A symbolic batch: the nodes that need it are listed as unknown, never zero; --input-shape fixes it.
expect_tool "symbolic dim: unknown, said" 0 "conv1 (Conv): 'conv1_out' has the shape [N,8,32,32], not static" -- inspect "$M" --cost
expect_tool "symbolic dim: --input-shape" 0 '"unknown_nodes": 0' -- inspect "$M" --cost --json --input-shape image=2,3,32,32

# Subgraphs: each If branch listed under its path and counted once.
expect_tool "subgraphs" 0 '"subgraph_nodes": 2' -- inspect "$SOURCE_DIR/testdata/tiny_if.onnx" --cost --json
cp "$WORK/stdout" "$WORK/if.json"
json_is "subgraph nodes listed" "$WORK/if.json" "sorted(n['graph'] for n in c['nodes'] if n['graph'] != 'main') == ['main/select:else_branch', 'main/select:then_branch'] and c['flops'] == 6"

# Bad input.
"$PYTHON" - "$WORK/contradiction.onnx" <<'EOF'
import sys
from onnx import TensorProto, helper
g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "bad",
                      [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                       helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 5])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
open(sys.argv[1], "wb").write(m.SerializeToString())
EOF
expect_tool "shapes that cannot be inferred" 2 "shapes cannot be inferred" -- inspect "$WORK/contradiction.onnx" --cost
expect_tool "--input-shape without --cost" 2 "pass --cost" -- inspect "$M" --input-shape image=1,3,32,32
expect_tool "no such input" 2 "--input-shape" -- inspect "$M" --cost --input-shape nope=1,3,32,32
expect_tool "contradicting dims" 2 "--input-shape" -- inspect "$M" --cost --input-shape image=1,3,32

finish
