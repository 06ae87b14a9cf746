#!/usr/bin/env bash
# `inspect --graph`: testdata/tiny_cnn.onnx drawn as .dot (read back by `dot -Tplain`: every node,
# as many edges as the model has) and as .svg (valid XML, one <g class="node"> per drawn node),
# the same bytes twice, --input-shape in the edge labels, the --from/--to part, a generated
# 240-node model clustered by name prefix, and bad input: an unknown extension, OUT a folder or
# the model itself, --from a name that is no tensor, dot missing, failing or too slow (one line,
# exit 2, no file written).
#
# Needs Graphviz's dot and Debian's python3 (the 240-node model: python3-onnx; missing: that
# part skipped). Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v dot >/dev/null 2>&1 || skip_all "Graphviz's dot (Debian's graphviz)"
[[ -x $PYTHON ]] || skip_all "$PYTHON"
make_work graph
M=$SOURCE_DIR/testdata/tiny_cnn.onnx  # image float[N,3,32,32] -> 6 nodes -> probs

# plain_count FILE KIND: the lines of `dot -Tplain FILE` starting with KIND (node, edge).
plain_count() { dot -Tplain "$1" | grep -c "^$2 "; }
# model_edges MODEL: the edges a drawing of MODEL holds: each node input that is not a weight
# (nor omitted), and each graph output.
model_edges() {
  "$ONNXTOOL" inspect "$1" --nodes --initializers --json | "$PYTHON" -c '
import json, sys
j = json.load(sys.stdin)
weights = {i["name"] for i in j["initializers"] if i["graph"] == "main"}
print(sum(1 for n in j["nodes"] if n["graph"] == "main" for i in n["inputs"] if i and i not in weights) + len(j["outputs"]))'
}

# --- .dot
expect_tool "tiny_cnn .dot" 0 "wrote $OUT/g.dot (6 nodes, 7 edges" -- inspect "$M" --graph "$OUT/g.dot"
cp "$OUT/g.dot" "$WORK/g.dot"
edges=$(model_edges "$M")
[[ $edges -eq 7 ]] || fail "tiny_cnn has $edges edges by its nodes, 7 expected"
[[ $(plain_count "$WORK/g.dot" node) -eq 8 ]] || fail ".dot: $(plain_count "$WORK/g.dot" node) nodes, expected 6 + input + output"
[[ $(plain_count "$WORK/g.dot" edge) -eq $edges ]] || fail ".dot: $(plain_count "$WORK/g.dot" edge) edges, expected $edges"
for needle in '"Conv\nconv1\nW 8x3x3x3\nB 8\nkernel_shape=[3,3]' relu1 pool1 '"Flatten\nflatten' '"Gemm\nfc\nB 10x2048\nC 10\ntransB=1' \
              '"Softmax\nsoftmax\naxis=-1' '"image\nfloat[N,3,32,32]"' '"probs\nfloat[N,10]"' 'label="float[N,8,32,32]"'; do
  if grep -qF -- "$needle" "$WORK/g.dot"; then ok; else fail ".dot lacks $needle"; fi
done
"$ONNXTOOL" inspect "$M" --graph "$WORK/again.dot" >/dev/null 2>&1
if cmp -s "$WORK/g.dot" "$WORK/again.dot"; then ok; else fail "two drawings of tiny_cnn differ"; fi

expect_tool "--input-shape" 0 "wrote" -- inspect "$M" --graph "$OUT/s.dot" --input-shape image=2,3,32,32
if grep -qF 'label="float[2,8,16,16]"' "$OUT/s.dot" && ! grep -qF '[N,' "$OUT/s.dot"; then ok; else fail "--input-shape: dims not in the labels"; fi

expect_tool "--json" 0 '"graph"' -- inspect "$M" --graph "$OUT/j.dot" --json
if "$PYTHON" -c 'import json,sys; g=json.load(open(sys.argv[1]))["graph"]; sys.exit(0 if (g["format"], g["nodes"], g["edges"], g["clusters"]) == ("dot", 6, 7, 0) and g["bytes"] > 0 else 1)' "$WORK/stdout"; then ok
else fail "--json: $(head -c 400 "$WORK/stdout")"; fi

# --- .svg
expect_tool "tiny_cnn .svg" 0 "wrote $OUT/g.svg" -- inspect "$M" --graph "$OUT/g.svg"
if "$PYTHON" -c '
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
g = d.getElementsByTagName("g")
nodes = [e for e in g if e.getAttribute("class") == "node"]
edges = [e for e in g if e.getAttribute("class") == "edge"]
sys.exit(0 if len(nodes) == 8 and len(edges) == 7 else 1)' "$OUT/g.svg"; then ok
else fail ".svg: not XML with 8 nodes and 7 edges"; fi

# --- the part between tensors, as extract cuts it: MaxPool and Flatten
expect_tool "--from/--to" 0 "(2 nodes, 3 edges" -- inspect "$M" --graph "$OUT/part.dot" --from relu1_out --to flat
if grep -qF pool1 "$OUT/part.dot" && grep -qF '"Flatten' "$OUT/part.dot" && ! grep -qF conv1 "$OUT/part.dot" \
   && [[ $(plain_count "$OUT/part.dot" node) -eq 4 ]]; then ok; else fail "--from/--to: not MaxPool and Flatten alone"; fi

# --- a 240-node model with path-like names: clustered by prefix
if has_python onnx; then
  "$PYTHON" - "$WORK/big.onnx" <<'EOF'
import sys
from onnx import TensorProto, helper
nodes, v = [], "x"
for layer in range(12):
    for j in range(20):
        out = "t%d_%d" % (layer, j)
        part = "attention" if j < 10 else "mlp"
        nodes.append(helper.make_node("Relu" if j % 2 else "Neg", [v], [out], name="/encoder/layer.%d/%s/op_%d" % (layer, part, j)))
        v = out
g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                      [helper.make_tensor_value_info(v, TensorProto.FLOAT, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
open(sys.argv[1], "wb").write(m.SerializeToString())
EOF
  # Every name starts /encoder/layer.: the boxes start after it, a box per layer holding one
  # for its attention and one for its mlp: 36 clusters.
  expect_tool "240 nodes clustered" 0 "(240 nodes, 241 edges, 36 clusters" -- inspect "$WORK/big.onnx" --graph "$OUT/big.dot"
  if grep -qF 'label="encoder/layer/11"' "$OUT/big.dot" && [[ $(grep -c '/attention"' "$OUT/big.dot") -eq 12 ]] \
     && [[ $(grep -c 'subgraph cluster_' "$OUT/big.dot") -eq 36 ]] \
     && [[ $(plain_count "$OUT/big.dot" node) -eq 242 ]]; then ok; else fail "240 nodes: not clustered by layer"; fi
  expect_tool "--cluster-depth 1" 0 "12 clusters" -- inspect "$WORK/big.onnx" --graph "$OUT/big1.dot" --cluster-depth 1
  expect_tool "--cluster-depth 0" 0 "(240 nodes, 241 edges," -- inspect "$WORK/big.onnx" --graph "$OUT/flat.dot" --cluster-depth 0
  if ! grep -q subgraph "$OUT/flat.dot"; then ok; else fail "--cluster-depth 0 clustered"; fi
  start=$(date +%s%N)
  expect_tool "240 nodes .svg" 0 "wrote" -- inspect "$WORK/big.onnx" --graph "$OUT/big.svg"
  echo "240-node .svg laid out in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  # Awkward names through dot into XML: quotes, a backslash, a newline, '&', '<', non-ASCII,
  # leading digits.
  "$PYTHON" - "$WORK/names.onnx" <<'EOF'
import sys
from onnx import TensorProto, helper
a, b, c = '0 "in"\\put', "1st\n<out> & \u00fc", "2 -> {x; y}"
n1 = helper.make_node("Relu", [a], [b], name='9 "node"\\ & <\u00e9>')
n2 = helper.make_node("Neg", [b], [c], name="\u00f1\nline")
g = helper.make_graph([n1, n2], "names", [helper.make_tensor_value_info(a, TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info(c, TensorProto.FLOAT, [2])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
open(sys.argv[1], "wb").write(m.SerializeToString())
EOF
  expect_tool "awkward names .svg" 0 "(2 nodes, 3 edges" -- inspect "$WORK/names.onnx" --graph "$OUT/names.svg"
  if "$PYTHON" -c '
import sys, xml.dom.minidom
d = xml.dom.minidom.parse(sys.argv[1])
text = "|".join(t.data for e in d.getElementsByTagName("text") for t in e.childNodes if t.nodeType == t.TEXT_NODE)
want = ["0 \"in\"\\put", "9 \"node\"\\ & <\u00e9>", "\u00f1\\nline", "2 -> {x; y}", "float[2]"]
sys.exit(0 if all(w in text for w in want) else 1)' "$OUT/names.svg"; then ok
  else fail "awkward names: not shown as written in the .svg"; fi
else
  missing_data "$PYTHON with python3-onnx (the 240-node model)"
fi

# --- bad input: one line, exit 2, nothing written
expect_tool "unknown extension" 2 "write .dot (Graphviz text) or .svg" -- inspect "$M" --graph "$OUT/g.png"
mkdir -p "$WORK/folder.svg"
expect_tool "OUT a folder" 2 "--graph $WORK/folder.svg" -- inspect "$M" --graph "$WORK/folder.svg"
[[ -d $WORK/folder.svg && -z $(ls -A "$WORK/folder.svg") ]] && ok || fail "the folder OUT was changed"
cp "$M" "$WORK/self.dot"
expect_tool "OUT the model" 2 "--graph $WORK/self.dot" -- inspect "$WORK/self.dot" --graph "$WORK/self.dot"
cmp -s "$M" "$WORK/self.dot" && ok || fail "the model was overwritten"
expect_tool "--from no tensor" 2 "--from: 'nosuch'" -- inspect "$M" --graph "$OUT/g.dot" --from nosuch --to flat
expect_tool "--from without --to" 2 "--from and --to go together" -- inspect "$M" --graph "$OUT/g.dot" --from relu1_out
expect_tool "--from without --graph" 2 "--from goes with --graph" -- inspect "$M" --from relu1_out --to flat
expect_tool "--cluster-depth without --graph" 2 "--cluster-depth goes with --graph" -- inspect "$M" --cluster-depth 2
expect_tool "--time-limit with .dot" 2 "--time-limit bounds the layout of an .svg" -- inspect "$M" --graph "$OUT/g.dot" --time-limit 5
mkdir -p "$WORK/nodot"
expect "dot missing" 2 "install graphviz" -- env PATH="$WORK/nodot" "$ONNXTOOL" inspect "$M" --graph "$OUT/g.svg"
expect "dot missing, .dot" 0 "wrote" -- env PATH="$WORK/nodot" "$ONNXTOOL" inspect "$M" --graph "$OUT/g.dot"
# A dot that fails, and one that never ends.
mkdir -p "$WORK/baddot" "$WORK/slowdot"
printf '#!/bin/sh\ncat >/dev/null\necho "Error: syntax error in line 1" >&2\nexit 1\n' >"$WORK/baddot/dot"
printf '#!/bin/sh\nexec sleep 30\n' >"$WORK/slowdot/dot"
chmod +x "$WORK/baddot/dot" "$WORK/slowdot/dot"
expect "dot fails" 2 "dot -Tsvg failed (exit 1): Error: syntax error in line 1" -- \
  env PATH="$WORK/baddot:$PATH" "$ONNXTOOL" inspect "$M" --graph "$OUT/g.svg"
start=$(date +%s)
expect "dot too slow" 2 "within 1 s" -- env PATH="$WORK/slowdot:$PATH" "$ONNXTOOL" inspect "$M" --graph "$OUT/g.svg" --time-limit 1
(( $(date +%s) - start < 10 )) && ok || fail "--time-limit 1 did not stop dot"

finish
