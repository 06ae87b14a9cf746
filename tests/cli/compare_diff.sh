#!/usr/bin/env bash
# `onnxtool compare` and `onnxtool diff` on real models: a model against itself (exit 0, no
# difference), against a copy with one weight scaled by 1.1 (compare exits 1 and --per-layer
# names the node that reads the weight; diff reports that initializer), against its convert
# round trip (diff: equal) and its optimized version (diff: nodes removed), and mismatched inputs
# (exit 2, one line).
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_CACHE_DIR (real models under models/).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MODEL=$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx
needs_file "$MODEL"
needs_python onnx numpy
make_work compare
LOG=$WORK/log
# check LABEL EXPECTED_RC ACTUAL_RC
check() { [[ $2 -eq $3 ]] && ok || fail "$1: exit $3, expected $2"; }
SHAPE=(--input-shape x=1,3,48,192)

"$ONNXTOOL" compare "$MODEL" "$MODEL" "${SHAPE[@]}" --samples 2 --random >"$LOG" 2>&1
check "compare with itself" 0 $?

# The weight of the first Conv scaled by 1.1: the first layer diverges. (The exporter keeps the
# weights in Constant nodes; the optimized model has them as initializers.)
"$ONNXTOOL" optimize "$MODEL" -o "$WORK/base.onnx" >/dev/null 2>&1
BASE=$WORK/base.onnx
"$PYTHON" - "$BASE" "$WORK/scaled.onnx" <<'EOF' >"$WORK/scaled_info"
import sys
import onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
consumers = {i: n for n in reversed(m.graph.node) for i in n.input}
inits = {t.name: t for t in m.graph.initializer}
conv = next(n for n in m.graph.node if n.op_type == "Conv" and n.input[1] in inits)
t = inits[conv.input[1]]
a = numpy_helper.to_array(t) * 1.1
t.CopyFrom(numpy_helper.from_array(a.astype(a.dtype), t.name))
onnx.save(m, sys.argv[2])
print(conv.name, conv.input[1], conv.output[0])
EOF
read -r CONV WEIGHT CONV_OUT <"$WORK/scaled_info"
"$ONNXTOOL" compare "$BASE" "$WORK/scaled.onnx" "${SHAPE[@]}" --per-layer >"$LOG" 2>&1
check "compare with a scaled weight" 1 $?
grep -q "first beyond tolerance: tensor $CONV_OUT (node $CONV)" "$LOG" && ok ||
  fail "--per-layer does not name $CONV ($CONV_OUT) first: $(grep 'first beyond' "$LOG")"
"$ONNXTOOL" compare "$BASE" "$WORK/scaled.onnx" "${SHAPE[@]}" --per-layer --json >"$LOG.json" 2>"$LOG.err"
"$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["within_tolerance"]; assert d["per_layer"]["first_beyond_tolerance"]["node"] == sys.argv[2]' "$LOG.json" "$CONV" &&
  ok || fail "compare --json per_layer"
"$ONNXTOOL" diff "$BASE" "$WORK/scaled.onnx" >"$LOG" 2>&1
check "diff with a scaled weight" 1 $?
grep -q "initializer_changed $WEIGHT: " "$LOG" && ok || fail "diff does not report $WEIGHT: $(cat "$LOG")"

"$ONNXTOOL" convert "$MODEL" -o "$WORK/round.onnx" >/dev/null 2>&1
"$ONNXTOOL" diff "$MODEL" "$WORK/round.onnx" >"$LOG" 2>&1
check "diff with the convert round trip" 0 $?
"$ONNXTOOL" optimize "$MODEL" -o "$WORK/opt.onnx" >/dev/null 2>&1
"$ONNXTOOL" diff "$MODEL" "$WORK/opt.onnx" --json >"$LOG.json" 2>&1
check "diff with the optimized model" 1 $?
"$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); k=[x["kind"] for x in d["differences"]]; assert "node_removed" in k' "$LOG.json" &&
  ok || fail "diff --json lists no removed node"

# Inputs that do not correspond: exit 2, one line naming the input.
expect_tool "compare of unrelated models" 2 "input" -- compare "$MODEL" "$SOURCE_DIR/testdata/tiny_cnn.onnx"

finish
