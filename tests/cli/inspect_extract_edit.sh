#!/usr/bin/env bash
# Seeing inside a model (issue 20, section 4): `inspect --nodes/--initializers` (subgraph op
# counts, the unsorted-graph line), `run --outputs` of an intermediate value and `run --dump-dir`
# (every value plus index.json), `extract` (the subgraph between tensors, run against the
# original, and in onnxruntime when it is there) and `edit` (renames, input dims, metadata,
# --in-place). Bad input: one line, exit 2, nothing written, the input untouched.
#
# Needs the models in testdata/; PaddleOCR cls from the cache and python3-onnx/numpy/onnxruntime
# for the parts that use them (missing: noted as skipped).
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
M=$SOURCE_DIR/testdata/tiny_cnn.onnx  # image float[N,3,32,32] -> conv1 relu1 pool1 flatten fc softmax -> probs
IF=$SOURCE_DIR/testdata/tiny_if.onnx  # x float[3], cond bool[] -> If reading x in both branches -> y
CLS=$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx
needs_file "$M" "$IF"
make_work inspect_extract_edit
before=$(sha256sum "$M" "$IF")

# has LABEL FILE NEEDLE: FILE holds NEEDLE.
has() {
  if grep -qF -- "$3" "$2"; then ok; else fail "$1: no '$3' in $(head -c 400 "$2")"; fi
}
# json_is LABEL FILE EXPR: the python expression over `d` (the JSON document in FILE) is true.
json_is() {
  has_python json || { missing_data "$PYTHON (JSON check: $1)"; return; }
  if "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($3) else 1)" "$2" 2>/dev/null; then ok
  else fail "$1: not ($3): $(head -c 400 "$2")"; fi
}

# --- inspect
expect_tool "inspect --nodes" 0 "#0 conv1: Conv(image, conv1.weight, conv1.bias) -> conv1_out float[N,8,32,32]" -- inspect "$M" --nodes
has "inspect --nodes: attributes" "$WORK/stdout" "kernel_shape=[3,3]"
has "inspect --nodes: inferred output" "$WORK/stdout" "softmax: Softmax(logits) -> probs float[N,10]"
expect_tool "inspect --initializers" 0 "conv1.weight: float[8,3,3,3], 864 B" -- inspect "$M" --initializers
expect_tool "inspect default" 0 "ops (6 types):" -- inspect "$M"
if grep -qE "^(nodes|initializers) \(|^order:" "$WORK/stdout"; then fail "inspect default: lists nodes, initializers or an order line"; else ok; fi
expect_tool "inspect: subgraph ops apart" 0 "of which in subgraphs (" -- inspect "$IF"
expect_tool "inspect: subgraph nodes listed" 0 " in main/select:then_branch:" -- inspect "$IF" --nodes
expect_tool "inspect --json --nodes --initializers" 0 "" -- inspect "$M" --json --nodes --initializers
json_is "inspect json: nodes" "$WORK/stdout" "len(d['nodes']) == 6 and d['nodes'][0]['outputs'][0]['type'] == 'float[N,8,32,32]'"
json_is "inspect json: attributes" "$WORK/stdout" "d['nodes'][0]['attributes']['kernel_shape'] == [3, 3]"
json_is "inspect json: initializers" "$WORK/stdout" \
  "len(d['initializers']) == 4 and d['initializers'][0]['bytes'] > 0 and d['initializers'][0]['external'] is False"
json_is "inspect json: sorted" "$WORK/stdout" "d['topologically_sorted'] is True and d['unsorted'] is None and d['subgraph_op_counts'] == {}"
if has_python onnx; then
  # Two nodes in reverse order, and two names that sanitize to the same file stem.
  "$PYTHON" - "$WORK" <<'EOF'
import sys
from onnx import TensorProto, helper, save
d = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
late = helper.make_node("Neg", ["a/b"], ["a_b"], name="second")
early = helper.make_node("Relu", ["x"], ["a/b"], name="first")
out = helper.make_node("Abs", ["a_b"], ["y"], name="third")
m = helper.make_model(helper.make_graph([late, early, out], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
save(m, f"{d}/unsorted.onnx")
m = helper.make_model(helper.make_graph([early, late, out], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
save(m, f"{d}/collide.onnx")
# A sequence and a bfloat16 tensor between the input and the output: .npy holds neither.
zero = helper.make_tensor("zero", TensorProto.INT64, [], [0])
nodes = [helper.make_node("SequenceConstruct", ["x", "x"], ["seq"]), helper.make_node("SequenceAt", ["seq", "zero"], ["first"]),
         helper.make_node("Cast", ["first"], ["half"], to=TensorProto.BFLOAT16), helper.make_node("Cast", ["half"], ["y"], to=TensorProto.FLOAT)]
m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [zero]), opset_imports=[helper.make_opsetid("", 13)])
save(m, f"{d}/kinds.onnx")
# A Loop of 3 iterations: s = s * 2 + i, its body's values written once per iteration.
B = TensorProto.BOOL
body = helper.make_graph(
    [helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT, name="cast"), helper.make_node("Mul", ["s_in", "two"], ["step"], name="mul"),
     helper.make_node("Add", ["step", "i_f"], ["s_out"], name="add"), helper.make_node("Identity", ["c_in"], ["c_out"], name="keep")],
    "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c_in", B, []),
             helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("c_out", B, []), helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [2])])
inits = [helper.make_tensor("n", TensorProto.INT64, [], [3]), helper.make_tensor("yes", B, [], [True]),
         helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])]
loop = helper.make_node("Loop", ["n", "yes", "x"], ["y"], body=body, name="loop")
m = helper.make_model(helper.make_graph([loop], "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])
save(m, f"{d}/loop.onnx")
EOF
  expect_tool "inspect: unsorted" 0 "not topologically sorted (main: node 'second' (Neg) uses 'a/b' before node 'first' (Relu) produces it); fix: onnxtool optimize" -- inspect "$WORK/unsorted.onnx"
  has "inspect: the fix" "$WORK/stdout" "--passes sort_topologically"
  expect_tool "run --dump-dir: colliding names" 0 "dumped 3 values" -- run "$WORK/collide.onnx" --random --dump-dir "$WORK/collide"
  json_is "dump index: distinct files" "$WORK/collide/index.json" \
    "d['tensors']['a/b']['file'] == 'a_b.npy' and d['tensors']['a_b']['file'] == 'a_b_1.npy' and d['tensors']['a_b']['op_type'] == 'Neg'"
  expect_tool "run --dump-dir: a sequence and bfloat16" 0 "dumped 4 values" -- run "$WORK/kinds.onnx" --random --dump-dir "$WORK/kinds"
  json_is "dump index: .pb for what .npy cannot hold" "$WORK/kinds/index.json" \
    "d['tensors']['seq']['file'] == 'seq.pb' and d['tensors']['half']['file'] == 'half.pb' and d['tensors']['y']['file'] == 'y.npy'"
  [[ -s $WORK/kinds/seq.pb && -s $WORK/kinds/half.pb ]] && ok || fail "run --dump-dir: seq.pb or half.pb missing"
  # A Loop body's values, one file per iteration, checked against numpy.
  "$PYTHON" -c "import numpy as np; np.save('$WORK/loop_x.npy', np.array([0.5, -1.25], np.float32))"
  expect_tool "run --dump-dir: a Loop body" 0 "dumped 13 values to $WORK/loopdump (12 of them runs of subgraph values; 0 skipped" -- \
    run "$WORK/loop.onnx" --input x="$WORK/loop_x.npy" --dump-dir "$WORK/loopdump"
  "$PYTHON" - "$WORK/loopdump" <<'EOF' && ok || fail "run --dump-dir: the Loop body's values are not numpy's"
import json, sys, numpy as np
d = sys.argv[1]
index = json.load(open(d + "/index.json"))
by_name = {t["name"]: t for t in index["subgraph_tensors"]}
assert by_name["step"]["graph"] == "the subgraph 'body' of node 'loop' (Loop)", by_name["step"]
s = np.array([0.5, -1.25], np.float32)
for i in range(3):
    step = s * 2
    s = step + i
    assert [r["file"] for r in (by_name["step"]["runs"][i], by_name["s_out"]["runs"][i])] == [f"step.{i}.npy", f"s_out.{i}.npy"]
    assert np.array_equal(np.load(f"{d}/step.{i}.npy"), step) and np.array_equal(np.load(f"{d}/s_out.{i}.npy"), s)
    assert np.load(f"{d}/i_f.{i}.npy") == i and np.load(f"{d}/c_out.{i}.npy") == True
assert np.array_equal(np.load(d + "/y.npy"), s) and len(by_name["s_out"]["runs"]) == 3
EOF
  expect_tool "run --outputs: a Loop body's value" 2 "--outputs: 'step', a value of the subgraph 'body' of node 'loop' (Loop), was computed 3 times in this run" -- \
    run "$WORK/loop.onnx" --random --outputs step
else
  missing_data "python3-onnx (unsorted graph, colliding names, value kinds)"
fi

# --- run: intermediate values
expect_tool "run --outputs an intermediate" 0 "relu1_out: float[1,8,32,32]" -- run "$M" --random --outputs relu1_out,probs
# A branch's value, when its If ran once: returned as the If's output is (cond is true on --random).
expect_tool "run --outputs a subgraph value" 0 "then_y: float[3]" -- run "$IF" --random --outputs then_y,y --output-dir "$WORK/branch"
cmp -s "$WORK/branch/then_y.npy" "$WORK/branch/y.npy" && ok || fail "run --outputs then_y: not the If's output"
expect_tool "run --outputs a branch not taken" 2 "--outputs: 'else_y', a value of the subgraph 'else_branch' of node 'select' (If), was not computed in this run" -- \
  run "$IF" --random --outputs else_y
expect_tool "run --dump-dir" 0 "dumped 6 values to $WORK/dump (0 skipped" -- run "$M" --random --dump-dir "$WORK/dump"
for t in conv1_out relu1_out pool1_out flat logits probs; do
  [[ -s $WORK/dump/$t.npy ]] && ok || fail "run --dump-dir: no $t.npy"
done
[[ -s $WORK/dump/index.json ]] && ok || fail "run --dump-dir: no index.json"
json_is "dump index" "$WORK/dump/index.json" \
  "d['tensors']['pool1_out'] == {'file': 'pool1_out.npy', 'node': 'pool1', 'op_type': 'MaxPool', 'dtype': 'float', 'shape': [1, 8, 16, 16]}"
"$ONNXTOOL" run "$M" --random --outputs relu1_out --output-dir "$WORK/one" >/dev/null 2>&1
cmp -s "$WORK/one/relu1_out.npy" "$WORK/dump/relu1_out.npy" && ok || fail "run --dump-dir: relu1_out differs from run --outputs relu1_out"
touch "$WORK/plainfile"
expect_tool "run --dump-dir a file" 2 "--dump-dir $WORK/plainfile: exists and is not a directory" -- run "$M" --random --dump-dir "$WORK/plainfile"
expect_tool "run --dump-dir: subgraph model" 0 "dumped 2 values to $WORK/ifdump (1 of them runs of subgraph values; 0 skipped" -- \
  run "$IF" --random --dump-dir "$WORK/ifdump"
json_is "dump index: the branch taken and the other" "$WORK/ifdump/index.json" \
  "[(t['name'], [r['file'] for r in t['runs']]) for t in d['subgraph_tensors']] == [('then_y', ['then_y.0.npy']), ('else_y', [])]"
cmp -s "$WORK/ifdump/then_y.0.npy" "$WORK/ifdump/y.npy" && ok || fail "run --dump-dir: then_y.0.npy is not the If's output"

# --- extract
expect_tool "extract" 0 "1 identical (exact tolerance)" -- extract "$M" -o "$OUT/mid.onnx" --from relu1_out --to logits
cp "$OUT/mid.onnx" "$WORK/mid.onnx"
has "extract: node count" "$WORK/stdout" "extracted 3 of 6 nodes, 2 of 4 initializers"
has "extract: typed input" "$WORK/stdout" "inputs:  relu1_out float[N,8,32,32]"
expect_tool "check the extracted model" 0 "" -- check "$WORK/mid.onnx"
expect_tool "extract --json" 0 '"after": 3' -- extract "$M" -o "$OUT/mid.onnx" --from relu1_out --to logits --json
expect_tool "extract --no-verify" 0 "checked, not run (--no-verify)" -- extract "$M" -o "$OUT/mid.onnx" --from conv1_out --to probs --no-verify
# The extracted model on the original's intermediate value gives the original's logits, here
# and in onnxruntime.
"$ONNXTOOL" run "$M" --random --outputs relu1_out,logits --output-dir "$WORK/ref" >/dev/null 2>&1 || fail "run the original"
expect_tool "run the extracted model" 0 "logits: float[1,10]" -- run "$WORK/mid.onnx" --input relu1_out="$WORK/ref/relu1_out.npy" --output-dir "$WORK/mine"
cmp -s "$WORK/mine/logits.npy" "$WORK/ref/logits.npy" && ok || fail "extracted logits differ from the original's"
if has_ort && has_python numpy; then
  if node "$ORT_RUN" "$WORK/mid.onnx" --input relu1_out="$WORK/ref/relu1_out.npy" --output-dir "$WORK/ort" >/dev/null 2>"$WORK/ort_err"; then
    "$PYTHON" -c "import numpy as np,sys; a=np.load(sys.argv[1]); b=np.load(sys.argv[2]); sys.exit(0 if np.allclose(a,b,rtol=1e-4,atol=1e-5) else 1)" \
      "$WORK/ref/logits.npy" "$WORK/ort/logits.npy" && ok || fail "onnxruntime's logits of the extracted model differ"
  else
    fail "onnxruntime does not run the extracted model: $(head -c 300 "$WORK/ort_err")"
  fi
else
  missing_data "onnxruntime-node and numpy (the extracted model in onnxruntime)"
fi
expect_tool "extract: unknown tensor" 2 "--from: 'nope' is no tensor of the model" -- extract "$M" -o "$OUT/x.onnx" --from nope --to logits
expect_tool "extract: unknown output" 2 "--to: 'nada' is no tensor of the model" -- extract "$M" -o "$OUT/x.onnx" --from relu1_out --to nada
expect_tool "extract: input that does not cut" 2 "'image' does not cut the graph" -- extract "$M" -o "$OUT/x.onnx" --from image,relu1_out --to logits
expect_tool "extract: unreachable output" 2 "--from: output 'y' is not reachable from them: it needs the graph input 'cond'" -- \
  extract "$IF" -o "$OUT/x.onnx" --from x --to y
expect_tool "extract: subgraph tensor" 2 "is a tensor of the subgraph 'then_branch' of node 'select' (If)" -- \
  extract "$IF" -o "$OUT/x.onnx" --from x,cond --to then_y
mkdir -p "$WORK/adir"
expect_tool "extract: output a directory" 2 "$WORK/adir" -- extract "$M" -o "$WORK/adir" --from relu1_out --to logits
[[ -z $(ls -A "$WORK/adir") ]] && ok || fail "extract: something written into the directory"
cp "$M" "$WORK/copy.onnx"
copy_sum=$(sha256sum "$WORK/copy.onnx")
expect_tool "extract: output is the input" 2 "is the input model itself" -- extract "$WORK/copy.onnx" -o "$WORK/copy.onnx" --from relu1_out --to logits
expect_tool "extract: --seed with --no-verify" 2 "--seed: they choose how the result is verified" -- \
  extract "$M" -o "$OUT/x.onnx" --from relu1_out --to logits --no-verify --seed 3

# --- edit
expect_tool "edit: renames" 0 "verified 1 output(s)" -- edit "$M" -o "$OUT/r.onnx" --rename-input image=pixels --rename-output probs=scores
cp "$OUT/r.onnx" "$WORK/r.onnx"
expect_tool "edit: renamed input" 0 "pixels: float[N,3,32,32]" -- inspect "$WORK/r.onnx"
has "edit: renamed output" "$WORK/stdout" "scores: float[N,10]"
expect_tool "edit: a captured input renamed" 0 "identical" -- edit "$IF" -o "$OUT/if.onnx" --rename-input x=values
cp "$OUT/if.onnx" "$WORK/if.onnx"
expect_tool "edit: the branches read the new name" 0 "then_branch_Mul: Mul(values, scale)" -- inspect "$WORK/if.onnx" --nodes
expect_tool "edit: rename clash" 2 "'relu1_out' is already a tensor name in the model" -- edit "$M" -o "$OUT/x.onnx" --rename-input image=relu1_out
expect_tool "edit: clash inside a branch" 2 "'then_y' is already a tensor name" -- edit "$IF" -o "$OUT/x.onnx" --rename-input x=then_y
expect_tool "edit: unknown input" 2 "'picture' is not a graph input (inputs: image)" -- edit "$M" -o "$OUT/x.onnx" --rename-input picture=p
expect_tool "edit: two renames in one flag" 2 "give each rename its own flag" -- edit "$M" -o "$OUT/x.onnx" --rename-input image=a,probs=b
expect_tool "edit: rename without =" 2 "--rename-input" -- edit "$M" -o "$OUT/x.onnx" --rename-input image
expect_tool "edit: fixed batch" 0 "input shape(s) set" -- edit "$M" -o "$OUT/b4.onnx" --set-input-shape image=4,3,32,32
# Dims both models take (the original's batch is free): run against the original on them.
has "edit: fixed batch verified on image[4,3,32,32]" "$WORK/stdout" "image=float[4,3,32,32]"
cp "$OUT/b4.onnx" "$WORK/b4.onnx"
expect_tool "edit: the output's shape follows" 0 "probs: float[4,10]" -- inspect "$WORK/b4.onnx"
expect_tool "edit: batch made free again" 0 "" -- edit "$WORK/b4.onnx" -o "$OUT/bn.onnx" --set-input-shape image=batch,3,32,32
has "edit: freed batch verified on the original's size" "$WORK/stdout" "image=float[4,3,32,32]"
cp "$OUT/bn.onnx" "$WORK/bn.onnx"
expect_tool "edit: a fixed dim changed is checked only" 0 "checked, not run against the original: input 'image' dim 0 was 4, now 2" -- \
  edit "$WORK/b4.onnx" -o "$OUT/b2.onnx" --set-input-shape image=2,3,32,32
expect_tool "edit: free batch in the output" 0 "probs: float[batch,10]" -- inspect "$WORK/bn.onnx"
expect_tool "edit: bad shape text" 2 "dim 2 is empty" -- edit "$M" -o "$OUT/x.onnx" --set-input-shape image=1,,32,32
expect_tool "edit: bad dim" 2 "'-3' is neither a size nor a symbol" -- edit "$M" -o "$OUT/x.onnx" --set-input-shape image=-3,3,32,32
expect_tool "edit: a rank the Conv cannot take" 2 "the model contradicts the new shape: node 'conv1'" -- edit "$M" -o "$OUT/x.onnx" --set-input-shape image=1,3,32
expect_tool "edit: a size the weights contradict" 2 "the model contradicts the new shape" -- edit "$M" -o "$OUT/x.onnx" --set-input-shape image=1,3,16,16
expect_tool "edit: metadata" 0 "2 metadata set" -- edit "$M" -o "$OUT/meta.onnx" --set-metadata author=me --set-metadata license=MIT --producer-name tests
cp "$OUT/meta.onnx" "$WORK/meta.onnx"
expect_tool "edit: metadata shown" 0 "license: MIT" -- inspect "$WORK/meta.onnx"
has "edit: producer shown" "$WORK/stdout" "producer:     tests"
expect_tool "edit: metadata removed" 0 "1 metadata removed" -- edit "$WORK/meta.onnx" -o "$OUT/m2.onnx" --remove-metadata author
expect_tool "edit: absent metadata key" 2 "--remove-metadata nope: the model has no such key" -- edit "$M" -o "$OUT/x.onnx" --remove-metadata nope
expect_tool "edit: nothing to do" 2 "nothing to edit" -- edit "$M" -o "$OUT/x.onnx"
expect_tool "edit: output is the input" 2 "pass --in-place to overwrite it" -- edit "$WORK/copy.onnx" -o "$WORK/copy.onnx" --set-metadata a=b
expect_tool "edit: output a directory" 2 "$WORK/adir" -- edit "$M" -o "$WORK/adir" --set-metadata a=b
expect_tool "edit: --seed with a shape the original cannot take" 2 "--seed: the result is checked, not run against the original: input 'image' dim 0 was 4, now 2" -- \
  edit "$WORK/b4.onnx" -o "$OUT/x.onnx" --set-input-shape image=2,3,32,32 --seed 1
expect_tool "edit: --seed with a shape both take" 0 "image=float[2,3,32,32]" -- edit "$M" -o "$OUT/x.onnx" --set-input-shape image=2,3,32,32 --seed 1
[[ $(sha256sum "$WORK/copy.onnx") == "$copy_sum" ]] && ok || fail "a refused command changed its input"
expect_tool "edit --in-place" 0 "wrote $WORK/copy.onnx" -- edit "$WORK/copy.onnx" --in-place --set-metadata stage=edited
expect_tool "edit --in-place: the result" 0 "stage: edited" -- inspect "$WORK/copy.onnx"

[[ $(sha256sum "$M" "$IF") == "$before" ]] && ok || fail "the test models changed"

# --- a real model: PaddleOCR's direction classifier
if [[ -f $CLS ]]; then
  expect_tool "cls: extract a block" 0 "1 identical" -- extract "$CLS" -o "$OUT/block.onnx" --from hardswish_0.tmp_0 --to relu_1.tmp_0 \
    --input-shape x=1,3,48,192
  expect_tool "cls: everything after the stem" 0 "1 identical" -- extract "$CLS" -o "$OUT/head.onnx" --from hardswish_0.tmp_0 \
    --to softmax_0.tmp_0 --input-shape x=1,3,48,192
  expect_tool "cls: an output above the cut" 2 "--from: output 'batch_norm_0.tmp_3' is not reachable from them: it needs the graph input 'x'" -- \
    extract "$CLS" -o "$OUT/x.onnx" --from relu_1.tmp_0 --to batch_norm_0.tmp_3
  expect_tool "cls: dump every value" 0 "0 skipped" -- run "$CLS" --random --input-shape x=1,3,48,192 --dump-dir "$WORK/clsdump"
  expect_tool "cls: renames verified" 0 "identical" -- edit "$CLS" -o "$OUT/cls.onnx" --rename-input x=image --rename-output softmax_0.tmp_0=probs
  expect_tool "cls: renamed and fixed, verified" 0 "identical" -- edit "$CLS" -o "$OUT/cls.onnx" --rename-input x=image --set-input-shape x=1,3,48,192
else
  missing_data "$CLS"
fi

# --- a real model with If subgraphs reading outer values: Silero VAD v5 on real-shaped inputs
VAD=$MODELS/silero_vad_v5.onnx
if [[ -f $VAD ]] && has_python numpy onnx; then
  mkdir -p "$WORK/vad_in"
  "$PYTHON" -c "
import numpy as np, sys
d = sys.argv[1]
np.save(d + '/input.npy', (np.random.RandomState(0).rand(1, 512).astype(np.float32) - 0.5))
np.save(d + '/state.npy', np.zeros((2, 1, 128), np.float32))
np.save(d + '/sr.npy', np.array(16000, np.int64))" "$WORK/vad_in"
  expect_tool "vad: extract around the If" 0 "2 identical" -- extract "$VAD" -o "$OUT/vad.onnx" --from input,state,Equal_0_C \
    --to output,If_0_outputs_1 --input input="$WORK/vad_in/input.npy" --input state="$WORK/vad_in/state.npy" --input sr="$WORK/vad_in/sr.npy"
  expect_tool "vad: inputs the branches capture renamed" 0 "2 identical" -- edit "$VAD" -o "$OUT/vad.onnx" --rename-input state=h --rename-input sr=rate \
    --inputs "$WORK/vad_in"
  # Everything Silero computes is inside If_0 (and Ifs nested in it): each value of the branch
  # taken has one file, and the branch's outputs are what If_0 returned.
  expect_tool "vad: --dump-dir inside nested Ifs" 0 "(210 of them runs of subgraph values; 0 skipped" -- \
    run "$VAD" --inputs "$WORK/vad_in" --dump-dir "$WORK/vad_dump"
  "$PYTHON" - "$VAD" "$WORK/vad_dump" <<'EOF' && ok || fail "vad: the taken branch's dumped outputs are not If_0's"
import json, sys, numpy as np, onnx
model, d = onnx.load(sys.argv[1]), sys.argv[2]
index = json.load(open(d + "/index.json"))
ran = {t["name"]: t["runs"] for t in index["subgraph_tensors"]}
if_0 = next(n for n in model.graph.node if n.name == "If_0")
branches = {a.name: a.g for a in if_0.attribute}
taken = [g for g in branches.values() if any(ran.get(n.output[0]) for n in g.node)]
assert len(taken) == 1, "exactly one branch of If_0 ran"
checked = 0
for out, branch_out in zip(if_0.output, taken[0].output):
    if ran.get(branch_out.name):
        assert len(ran[branch_out.name]) == 1
        assert np.array_equal(np.load(f"{d}/{out}.npy"), np.load(f"{d}/{ran[branch_out.name][0]['file']}")), out
        checked += 1
assert checked == len(if_0.output), checked
EOF
else
  missing_data "$VAD, numpy and python3-onnx"
fi

finish
