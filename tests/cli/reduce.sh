#!/usr/bin/env bash
# `onnxtool reduce`: a model that makes something fail shrunk to the few nodes that still fail.
#  1. a planted crash: a generated 40-node model and a python script that exits 1 when the model
#     holds a Transpose with perm [0,2,1,3]; --command reduces it to that one node within 60 s,
#     and the result passes check; --fails-when, the budgets (--max-steps, --time-limit), a
#     command past --command-timeout, and an If kept whole with the outer value it reads;
#  2. a planted wrong rewrite: one Mul's constant changed in a copy of a generated model;
#     --compare-expect with a run --dump-dir of the good model finds that Mul;
#  3. a real model (PaddleOCR's mobile v2.0 classifier, fetched by testdata/fetch_models.sh): one
#     Conv's weights corrupted, found the same way;
#  4. onnxtool's own commands as the predicate: --verify 'optimize --rtol 0 --atol 0' on a
#     generated 17-node model finds the Conv and BatchNormalization optimize folds (the one rewrite
#     that changes the rounding); --crash 'check' finds the node whose name makes check crash (a
#     shim, tests/cli/crash_hook.c, kills any onnxtool process that maps a file holding it);
#  5. bad input: no predicate, two, a model that does not fail, an unreadable model, OUT over the
#     model, --fails-when without --command, --verify of a command that does not verify (one
#     line, exit 1 or 2, nothing written).
#
# Needs Debian's python3 with python3-onnx and python3-numpy (missing: skipped).
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
make_work reduce

# The generated models: `chain` (40 nodes over x float[1,8,8,8]: Add, Mul, Relu, Sigmoid and
# Transposes that keep the shape, with joins of earlier values; node t20 is the one Transpose
# with perm [0,2,1,3]) and `mul` (24 nodes), with `mul_bad`, where Mul m13's constant is 1.5
# instead of 0.5.
"$PYTHON" - "$WORK" <<'EOF' || { fail "the generator failed"; finish; }
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper

work = sys.argv[1]

def model(nodes, inits, last, name):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                          [helper.make_tensor_value_info(last, TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m

def const(inits, name, value):
    inits.append(helper.make_tensor(name, TensorProto.FLOAT, [1], [value]))
    return name

# chain: 40 nodes
nodes, inits, prev, values = [], [], "x", ["x"]
for i in range(40):
    out = "v%d" % i
    kind = i % 5
    if i == 20:
        nodes.append(helper.make_node("Transpose", [prev], [out], name="t20", perm=[0, 2, 1, 3]))
    elif kind == 0:
        nodes.append(helper.make_node("Transpose", [prev], [out], name="t%d" % i, perm=[0, 1, 3, 2]))
    elif kind == 1:
        nodes.append(helper.make_node("Add", [prev, const(inits, "c%d" % i, 0.1 * i)], [out], name="a%d" % i))
    elif kind == 2:
        nodes.append(helper.make_node("Mul", [prev, const(inits, "c%d" % i, 0.9)], [out], name="m%d" % i))
    elif kind == 3:
        nodes.append(helper.make_node("Relu", [prev], [out], name="r%d" % i))
    else:  # a join with a value three back
        nodes.append(helper.make_node("Add", [prev, values[-3]], [out], name="j%d" % i))
    prev = out
    values.append(out)
onnx.save(model(nodes, inits, prev, "chain"), work + "/chain.onnx")

# mul: 24 nodes of Mul, Add and Sigmoid; mul_bad: m13's constant changed
for bad in (False, True):
    nodes, inits, prev = [], [], "x"
    for i in range(24):
        out = "w%d" % i
        if i % 3 == 0:
            nodes.append(helper.make_node("Sigmoid", [prev], [out], name="s%d" % i))
        elif i % 3 == 1:
            value = 1.5 if (bad and i == 13) else 0.5
            nodes.append(helper.make_node("Mul", [prev, const(inits, "k%d" % i, value)], [out], name="m%d" % i))
        else:
            nodes.append(helper.make_node("Add", [prev, const(inits, "k%d" % i, 0.25)], [out], name="a%d" % i))
        prev = out
    onnx.save(model(nodes, inits, prev, "mul"), work + ("/mul_bad.onnx" if bad else "/mul.onnx"))

# ifm: an If whose branches read a value of the main graph (u1) from outer scope, between other
# nodes: x -> Relu u0 -> Mul u1 -> If sel (then: u1 * 2, else: u1 + 2) -> Sigmoid u3.
two = helper.make_tensor("two", TensorProto.FLOAT, [1], [2.0])
def branch(op, name):
    return helper.make_graph([helper.make_node(op, ["u1", "two"], [name + "_out"], name=name)], name, [],
                             [helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, [1, 8, 8, 8])])
nodes = [helper.make_node("Relu", ["x"], ["u0"], name="relu0"),
         helper.make_node("Mul", ["u0", "two"], ["u1"], name="mul1"),
         helper.make_node("If", ["cond"], ["u2"], name="sel", then_branch=branch("Mul", "then"),
                          else_branch=branch("Add", "else")),
         helper.make_node("Sigmoid", ["u2"], ["u3"], name="sig3")]
g = helper.make_graph(nodes, "ifm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8]),
                                     helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                      [helper.make_tensor_value_info("u3", TensorProto.FLOAT, [1, 8, 8, 8])], [two])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, work + "/ifm.onnx")

# The planted crash: exit 1 when the model holds a Transpose with perm [0,2,1,3].
with open(work + "/crash.py", "w") as f:
    f.write("""import sys, onnx
m = onnx.load(sys.argv[1])
for n in m.graph.node:
    if n.op_type == "Transpose" and [list(a.ints) for a in n.attribute if a.name == "perm"] == [[0, 2, 1, 3]]:
        print("crash: Transpose", n.name)
        sys.exit(1)
""")
EOF

# nodes_are LABEL MODEL EXPR: the python expression over `ops` (op types) and `names` (node
# names) of MODEL's main graph is true.
nodes_are() {
  if "$PYTHON" -c "import onnx,sys; g=onnx.load(sys.argv[1]).graph; ops=[n.op_type for n in g.node]; names=[n.name for n in g.node]; sys.exit(0 if ($3) else 1)" "$2" 2>/dev/null; then ok
  else fail "$1: not ($3): $("$PYTHON" -c "import onnx,sys; print([(n.op_type, n.name) for n in onnx.load(sys.argv[1]).graph.node][:12])" "$2" 2>&1 | tail -c 400)"; fi
}

# --- 1. the planted crash, through an external script
before=$(sha256sum "$WORK/chain.onnx")
start=$SECONDS
expect_tool "--command: the planted Transpose" 0 "reduced 40 -> 1 nodes" -- \
  reduce "$WORK/chain.onnx" -o "$OUT/small.onnx" --command "$PYTHON $WORK/crash.py {model}" \
  --inputs-out "$OUT/in" --log "$OUT/steps.log"
elapsed=$((SECONDS - start))
cp -r "$OUT" "$WORK/r1"  # the next `expect` empties $OUT
[[ $elapsed -le 60 ]] && ok || fail "--command took $elapsed s (60 s allowed)"
nodes_are "--command result" "$WORK/r1/small.onnx" "len(ops) <= 3 and 't20' in names"
expect_tool "--command result passes check" 0 "valid" -- check "$WORK/r1/small.onnx"
[[ -f $WORK/r1/in/v19.npy ]] && ok || fail "--inputs-out: no v19.npy (the Transpose's input): $(ls "$WORK/r1/in" 2>&1)"
"$PYTHON" -c "import numpy as np,sys; a=np.load(sys.argv[1]); sys.exit(0 if a.shape == (1,8,8,8) else 1)" "$WORK/r1/in/v19.npy" 2>/dev/null \
  && ok || fail "--inputs-out: v19.npy is not float[1,8,8,8]"
grep -qE '^step 1: 40 nodes: fails' "$WORK/r1/steps.log" && ok || fail "--log: no first step: $(head -3 "$WORK/r1/steps.log")"
grep -qE '^step [0-9]+: 1 nodes: fails' "$WORK/r1/steps.log" && ok || fail "--log: no one-node step that fails"
[[ $(sha256sum "$WORK/chain.onnx") == "$before" ]] && ok || fail "the input model changed"

# --fails-when judges the output, whatever the exit: `cat` exits 0, and the op type is in the
# model's bytes. The suffix search finds the last Transpose, t35. With --json.
expect_tool "--fails-when --json" 0 '"after": 1' -- \
  reduce "$WORK/chain.onnx" -o "$OUT/small2.onnx" --command "cat {model}" --fails-when 'Transpose' --json --quiet
"$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['kept'][0]['name'] == 't35' and d['minimal'] and d['budget_ended'] is None else 1)" "$WORK/stdout" \
  && ok || fail "--json: $(head -c 400 "$WORK/stdout")"
[[ ! -s $WORK/stderr ]] && ok || fail "--json --quiet: stderr: $(head -c 300 "$WORK/stderr")"

# A budget: --max-steps 3 ends the search early, saying so, and writes the smallest failing
# candidate found.
expect_tool "--max-steps" 0 "the budget ended the search (--max-steps 3)" -- \
  reduce "$WORK/chain.onnx" -o "$OUT/budget.onnx" --command "$PYTHON $WORK/crash.py {model}" --max-steps 3
nodes_are "--max-steps result" "$OUT/budget.onnx" "'t20' in names and len(ops) < 40"

# --time-limit bounds the search, not the first run of the whole model: 0.5 s ends it after a
# few of the ten runs the search needs.
expect_tool "--time-limit" 0 "the budget ended the search (--time-limit 0.5)" -- \
  reduce "$WORK/chain.onnx" -o "$OUT/budget.onnx" --command "$PYTHON $WORK/crash.py {model}" --time-limit 0.5
nodes_are "--time-limit result" "$OUT/budget.onnx" "'t20' in names"

# A command that runs past --command-timeout counts as not failing: nothing to reduce.
expect_tool "--command-timeout" 1 "timed out" -- \
  reduce "$WORK/chain.onnx" -o "$OUT/r.onnx" --command "sleep 5; false" --command-timeout 0.2

# A command that leaves a process behind holding its output: the run ends a second after the
# command's exit, the process killed with its group.
start=$SECONDS
expect_tool "a background process holding the output" 0 "reduced 40 -> " -- \
  reduce "$WORK/chain.onnx" -o "$OUT/r.onnx" --command "sleep 300 & exit 1" --max-steps 2
((SECONDS - start < 30)) && ok || fail "the background process held the search for $((SECONDS - start)) s"
pgrep -f "^sleep 300$" >/dev/null && fail "the background process outlived the search" || ok

# Interrupted (SIGINT, as Ctrl-C): the command's group is killed, nothing is written, exit 2.
rm -rf "$OUT" && mkdir -p "$OUT"
"$ONNXTOOL" reduce "$WORK/chain.onnx" -o "$OUT/r.onnx" --command "sleep 301; false" >"$WORK/int_out" 2>&1 &
pid=$!
sleep 2
kill -INT "$pid"
wait "$pid"
code=$?
[[ $code -eq 2 ]] && grep -q "interrupted by signal 2; nothing written" "$WORK/int_out" && ok ||
  fail "SIGINT: exit $code, $(tail -1 "$WORK/int_out")"
[[ -z $(ls -A "$OUT") ]] && ok || fail "SIGINT: something was written: $(ls "$OUT")"
sleep 0.2
pgrep -f "^sleep 301$" >/dev/null && fail "SIGINT: the command outlived onnxtool" || ok

# An If is kept whole with its branches; the main-graph value they read (u1) becomes an input.
expect_tool "an If node" 0 "reduced 4 -> 1 nodes" -- \
  reduce "$WORK/ifm.onnx" -o "$OUT/if.onnx" --command "cat {model}" --fails-when 'If' --inputs-out "$OUT/if_in"
"$PYTHON" -c "import onnx,sys; g=onnx.load(sys.argv[1]).graph; sys.exit(0 if [n.name for n in g.node] == ['sel'] and sorted(i.name for i in g.input) == ['cond', 'u1'] else 1)" "$OUT/if.onnx" 2>/dev/null \
  && ok || fail "an If node: not the If alone with inputs cond and u1"
[[ -f $OUT/if_in/u1.npy && -f $OUT/if_in/cond.npy ]] && ok || fail "an If node: --inputs-out lacks u1.npy or cond.npy: $(ls "$OUT/if_in" 2>&1)"

# --- 2. the planted wrong rewrite, against a good model's values
expect_tool "dump of the good model" 0 "" -- run "$WORK/mul.onnx" --random --dump-dir "$WORK/golden"
expect_tool "--compare-expect: the changed Mul" 0 "nodes in" -- \
  reduce "$WORK/mul_bad.onnx" -o "$OUT/mul.onnx" --compare-expect "$WORK/golden"
nodes_are "--compare-expect result" "$OUT/mul.onnx" "len(ops) <= 3 and 'm13' in names"
expect_tool "the good model does not fail" 1 "the model does not fail the predicate: nothing to reduce" -- \
  reduce "$WORK/mul.onnx" -o "$OUT/r.onnx" --compare-expect "$WORK/golden"

# --- 3. a real model: one Conv's weights (a Constant node's value there) corrupted
CLS=$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx
if [[ ! -f $CLS ]]; then
  missing_data "$CLS"
elif [[ $SANITIZED -eq 1 ]]; then
  # ~20 predicate runs of a 471-node model under the sanitizers take minutes: the Release run covers it.
  echo "note: the real-model case is skipped under the sanitizers"
else
  "$PYTHON" - "$CLS" "$WORK/cls_bad.onnx" <<'EOF' || fail "corrupting the classifier failed"
import sys
import numpy as np
import onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
producer = {o: n for n in m.graph.node for o in n.output}
conv = [n for n in m.graph.node if n.op_type == "Conv"][20]
assert conv.name == "p2o.Conv.20", conv.name
weight = producer[conv.input[1]]
value = next(a for a in weight.attribute if a.name == "value")
w = numpy_helper.to_array(value.t)
value.t.CopyFrom(numpy_helper.from_array((-1.5 * w + 0.1).astype(np.float32), value.t.name))
onnx.save(m, sys.argv[2])
EOF
  expect_tool "dump of the classifier" 0 "" -- run "$CLS" --random --input-shape x=1,3,48,192 --dump-dir "$WORK/cls_golden"
  expect_tool "--compare-expect on the classifier" 0 "nodes in" -- \
    reduce "$WORK/cls_bad.onnx" -o "$OUT/cls.onnx" --compare-expect "$WORK/cls_golden" --input-shape x=1,3,48,192
  cp "$OUT/cls.onnx" "$WORK/cls_small.onnx"
  nodes_are "the classifier's result" "$WORK/cls_small.onnx" "len(ops) <= 3 and 'p2o.Conv.20' in names"
  expect_tool "the classifier's result passes check" 0 "valid" -- check "$WORK/cls_small.onnx"
fi

# --- 4. onnxtool's own commands as the predicate
"$PYTHON" - "$WORK" <<'EOF' || fail "the Conv+BatchNormalization generator failed"
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(3)
nodes, inits, prev = [], [], "x"
for i in range(16):
    out = "v%d" % i
    if i == 9:
        inits += [numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w"),
                  numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")]
        nodes.append(helper.make_node("Conv", [prev, "w", "b"], ["conv"], name="conv9", pads=[1, 1, 1, 1]))
        for n, v in (("s", rng.uniform(0.5, 2, 4)), ("o", rng.standard_normal(4)), ("mu", rng.standard_normal(4)),
                     ("var", rng.uniform(0.5, 2, 4))):
            inits.append(numpy_helper.from_array(v.astype(np.float32), n))
        nodes.append(helper.make_node("BatchNormalization", ["conv", "s", "o", "mu", "var"], [out], name="bn9"))
    elif i % 3 == 0:
        nodes.append(helper.make_node("Relu", [prev], [out], name="planted_crash" if i == 12 else "r%d" % i))
    elif i % 3 == 1:
        nodes.append(helper.make_node("Sigmoid", [prev], [out], name="s%d" % i))
    else:
        nodes.append(helper.make_node("Add", [prev, "x"], [out], name="a%d" % i))
    prev = out
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                      [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 4, 8, 8])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1] + "/convbn.onnx")
EOF
expect_tool "--verify: the rewrite that changes the rounding" 0 "reduced 17 -> 2 nodes" -- \
  reduce "$WORK/convbn.onnx" -o "$OUT/cb.onnx" --verify 'optimize --rtol 0 --atol 0'
cp "$OUT/cb.onnx" "$WORK/cb.onnx" 2>/dev/null
nodes_are "--verify's result" "$WORK/cb.onnx" "sorted(ops) == ['BatchNormalization', 'Conv'] and 'conv9' in names"
expect_tool "--verify's result passes check" 0 "valid" -- check "$WORK/cb.onnx"
expect_tool "--verify: at optimize's own tolerance nothing fails" 1 "does not fail the predicate" -- \
  reduce "$WORK/convbn.onnx" -o "$OUT/cb.onnx" --verify optimize
if command -v cc >/dev/null 2>&1 && cc -shared -fPIC -o "$WORK/crash_hook.so" "$SOURCE_DIR/tests/cli/crash_hook.c" -ldl; then
  CRASH_HOOK_MARKER=planted_crash LD_PRELOAD=$WORK/crash_hook.so \
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    expect_tool "--crash: the node that makes check crash" 0 '"after": 1' -- \
    reduce "$WORK/convbn.onnx" -o "$OUT/crash.onnx" --crash check --json
  grep -q '"predicate": "crash"' "$WORK/stdout" && ok || fail "--crash --json does not name its predicate"
  cp "$OUT/crash.onnx" "$WORK/crash.onnx" 2>/dev/null
  nodes_are "--crash's result" "$WORK/crash.onnx" "names == ['planted_crash']"
  expect_tool "--crash: a command that does not crash" 1 "does not fail the predicate" -- \
    reduce "$WORK/convbn.onnx" -o "$OUT/crash.onnx" --crash check
else
  fail "the crash shim (tests/cli/crash_hook.c) does not build"
fi

# --- 5. bad input
M=$WORK/chain.onnx
expect_tool "no predicate" 2 "a predicate is required" -- reduce "$M" -o "$OUT/r.onnx"
expect_tool "two predicates" 2 "exclude each other" -- \
  reduce "$M" -o "$OUT/r.onnx" --command false --compare-expect "$WORK/golden"
expect_tool "a model that does not fail" 1 "the model does not fail the predicate: nothing to reduce" -- \
  reduce "$M" -o "$OUT/r.onnx" --command true
expect_tool "unreadable model" 2 "$WORK/missing.onnx" -- reduce "$WORK/missing.onnx" -o "$OUT/r.onnx" --command false
printf 'not a model' >"$WORK/garbage.onnx"
expect_tool "malformed model" 2 "garbage.onnx" -- reduce "$WORK/garbage.onnx" -o "$OUT/r.onnx" --command false
expect_tool "OUT is MODEL" 2 "" -- reduce "$M" -o "$M" --command false
[[ $(sha256sum "$WORK/chain.onnx") == "$before" ]] && ok || fail "-o MODEL changed the model"
expect_tool "--fails-when without --command" 2 "--fails-when" -- \
  reduce "$M" -o "$OUT/r.onnx" --compare-expect "$WORK/golden" --fails-when crash
expect_tool "a bad --fails-when" 2 "not a regular expression" -- \
  reduce "$M" -o "$OUT/r.onnx" --command false --fails-when '('
expect_tool "--verify of a command that does not verify" 2 "optimize or convert" -- \
  reduce "$M" -o "$OUT/r.onnx" --verify 'check'
expect_tool "--crash and --command" 2 "exclude each other" -- reduce "$M" -o "$OUT/r.onnx" --crash check --command false
expect_tool "--crash of no command" 2 "is not an onnxtool command" -- reduce "$M" -o "$OUT/r.onnx" --crash 'frobnicate'
expect_tool "--compare-expect not a folder" 2 "not a directory" -- \
  reduce "$M" -o "$OUT/r.onnx" --compare-expect "$WORK/nowhere"

finish
