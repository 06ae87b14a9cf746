#!/usr/bin/env bash
# Time bounds (runner::set_time_limit, Session::set_deadline): a 281-byte model whose Loop has a
# trip count of INT64_MAX, and 25 nested Loops of trip count 2 (33 million body runs), end every
# command that runs them with --time-limit S (or ONNXTOOL_TIME_LIMIT) within seconds of S: exit 2,
# one line naming the bound and the Loop, no output written.
#
# Environment: ONNXTOOL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
make_work time_limit
EXPECT_TIMEOUT=60

"$PYTHON" - "$WORK" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
f = lambda n, t=TensorProto.FLOAT, s=(1,): helper.make_tensor_value_info(n, t, list(s))
def body(inner_nodes, name):
    """A Loop body: the condition passed through, the state through `inner_nodes` (s_in -> s_out)."""
    return helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"])] + inner_nodes, name,
                             [f("i", TensorProto.INT64, ()), f("c_in", TensorProto.BOOL, ()), f("s_in")],
                             [f("c_out", TensorProto.BOOL, ()), f("s_out")])
one = numpy_helper.from_array(np.ones(1, np.float32), "one")
# forever: y = x + INT64_MAX (never).
b = body([helper.make_node("Add", ["s_in", "one"], ["s_out"])], "body")
b.initializer.append(one)
g = helper.make_graph([helper.make_node("Loop", ["M", "", "x"], ["y"], body=b, name="forever")], "g", [f("x")], [f("y")],
                      [numpy_helper.from_array(np.array(2**63 - 1, np.int64), "M")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/forever.onnx")
g.initializer[0].CopyFrom(numpy_helper.from_array(np.array(3, np.int64), "M"))
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/three.onnx")
# nested: 25 Loops of trip count 2 inside each other, the innermost adding one.
inner = body([helper.make_node("Add", ["s_in", "one"], ["s_out"])], "level25")
inner.initializer.append(one)
for level in range(24, 0, -1):
    inner = body([helper.make_node("Loop", ["two", "", "s_in"], ["s_out"], body=inner, name=f"loop{level + 1}")], f"level{level}")
g = helper.make_graph([helper.make_node("Loop", ["two", "", "x"], ["y"], body=inner, name="loop1")], "g", [f("x")], [f("y")],
                      [numpy_helper.from_array(np.array(2, np.int64), "two")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/nested.onnx")
EOF
[[ $(stat -c %s "$WORK/forever.onnx") -lt 400 ]] && ok || fail "forever.onnx is not a small model"

# timed LABEL LIMIT NEEDLE -- ARGS: exit 2 within LIMIT + 20 s (a loaded CI machine, the sanitizers),
# the line naming NEEDLE, nothing in $OUT.
timed() {
  local label=$1 limit=$2 needle=$3
  shift 4
  local start=$SECONDS
  expect_tool "$label" 2 "$needle" -- "$@"
  ((SECONDS - start <= limit + 20)) && ok || fail "$label: took $((SECONDS - start)) s for a limit of $limit s"
}
F=$WORK/forever.onnx
# The bound may strike before a node of the body or between iterations: both lines name the Loop.
timed "run" 2 "the subgraph 'body' of node 'forever' (Loop)" -- run "$F" --random --time-limit 2
timed "run --device vulkan" 2 "--time-limit 2 ran out" -- run "$F" --random --time-limit 2 --device vulkan
timed "compare" 2 "--time-limit 2 ran out" -- compare "$F" "$F" --random --time-limit 2
timed "optimize (verification)" 2 "--time-limit 2 ran out" -- optimize "$F" -o "$OUT/o.onnx" --time-limit 2
timed "convert --opset (verification)" 2 "--time-limit 2 ran out" -- convert "$F" --opset 14 -o "$OUT/c.onnx" --time-limit 2
timed "convert --to-fp16 (verification)" 2 "--time-limit 2 ran out" -- convert "$F" --to-fp16 -o "$OUT/h.onnx" --time-limit 2
timed "edit --producer-name (verification)" 2 "--time-limit 2 ran out" -- edit "$F" -o "$OUT/e.onnx" --producer-name x --time-limit 2
timed "extract (verification)" 2 "--time-limit 2 ran out" -- extract "$F" -o "$OUT/x.onnx" --from x --to y --time-limit 2
export ONNXTOOL_TIME_LIMIT=1.5
timed "ONNXTOOL_TIME_LIMIT" 2 "ONNXTOOL_TIME_LIMIT=1.5 ran out" -- run "$F" --random
timed "the flag wins over ONNXTOOL_TIME_LIMIT" 3 "--time-limit 3 ran out" -- run "$F" --random --time-limit 3
ONNXTOOL_TIME_LIMIT=abc expect_tool "ONNXTOOL_TIME_LIMIT=abc" 2 "ONNXTOOL_TIME_LIMIT: 'abc' is not a number of seconds" -- run "$F" --random
ONNXTOOL_TIME_LIMIT=-1 expect_tool "ONNXTOOL_TIME_LIMIT=-1" 2 "ONNXTOOL_TIME_LIMIT: '-1' is not a number of seconds" -- run "$F" --random
ONNXTOOL_TIME_LIMIT=1e30 expect_tool "ONNXTOOL_TIME_LIMIT=1e30" 2 "ONNXTOOL_TIME_LIMIT: '1e30' is not a number of seconds" -- run "$F" --random
unset ONNXTOOL_TIME_LIMIT
expect_tool "--time-limit 0" 2 "--time-limit" -- run "$F" --random --time-limit 0
expect_tool "--time-limit nan" 2 "--time-limit" -- run "$F" --random --time-limit nan
timed "25 nested Loops" 2 "of node 'loop1' (Loop)" -- run "$WORK/nested.onnx" --random --time-limit 2
# A model that ends is not touched by a bound it does not reach.
expect_tool "a bound not reached" 0 "min 3  max 3" -- run "$WORK/three.onnx" --random --input-range x=0,0 --time-limit 600
ONNXTOOL_TIME_LIMIT=600 expect_tool "ONNXTOOL_TIME_LIMIT not reached" 0 "min 3  max 3" -- run "$WORK/three.onnx" --random --input-range x=0,0
finish
