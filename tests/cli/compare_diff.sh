#!/usr/bin/env bash
# `onnxtool compare` and `onnxtool diff` on real models: a model against itself (exit 0, no
# difference), against a copy with one weight scaled by 1.1 (compare exits 1 and --per-layer
# names the node that reads the weight; diff reports that initializer), against its convert
# round trip (diff: equal) and its optimized version (diff: nodes removed), and mismatched inputs
# (exit 2, one line).
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_CACHE_DIR (real models under models/).
set -u
: "${ONNXTOOL:?set ONNXTOOL to the onnxtool binary}"
SOURCE_DIR=${ONNXTOOL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$SOURCE_DIR/tests/skip_lib.sh"
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$SOURCE_DIR/.cache}
PYTHON=/usr/bin/python3
MODEL=$CACHE_DIR/models/ch_ppocr_mobile_v2.0_cls_infer.onnx
if [[ ! -f $MODEL ]] || ! "$PYTHON" -c 'import onnx, numpy' 2>/dev/null; then
  skip_all "$MODEL or python3-onnx missing (testdata/fetch_models.sh)"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool_compare.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
check() {  # check LABEL EXPECTED_RC ACTUAL_RC
  if [[ $2 -eq $3 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1: exit $3, expected $2"; fi
}
SHAPE=(--shape x=1,3,48,192)

"$ONNXTOOL" compare "$MODEL" "$MODEL" "${SHAPE[@]}" --samples 2 --random >"$WORK/out" 2>&1
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
"$ONNXTOOL" compare "$BASE" "$WORK/scaled.onnx" "${SHAPE[@]}" --per-layer >"$WORK/out" 2>&1
check "compare with a scaled weight" 1 $?
if grep -q "first beyond tolerance: tensor $CONV_OUT (node $CONV)" "$WORK/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL: --per-layer does not name $CONV ($CONV_OUT) first: $(grep 'first beyond' "$WORK/out")"
fi
"$ONNXTOOL" compare "$BASE" "$WORK/scaled.onnx" "${SHAPE[@]}" --per-layer --json >"$WORK/out.json" 2>&1
if "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["within_tolerance"]; assert d["per_layer"]["first_beyond_tolerance"]["node"] == sys.argv[2]' "$WORK/out.json" "$CONV"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL: compare --json per_layer"
fi
"$ONNXTOOL" diff "$BASE" "$WORK/scaled.onnx" >"$WORK/out" 2>&1
check "diff with a scaled weight" 1 $?
grep -q "initializer_changed $WEIGHT: " "$WORK/out" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: diff does not report $WEIGHT: $(cat "$WORK/out")"; }

"$ONNXTOOL" convert "$MODEL" -o "$WORK/round.onnx" >/dev/null 2>&1
"$ONNXTOOL" diff "$MODEL" "$WORK/round.onnx" >"$WORK/out" 2>&1
check "diff with the convert round trip" 0 $?
"$ONNXTOOL" optimize "$MODEL" -o "$WORK/opt.onnx" >/dev/null 2>&1
"$ONNXTOOL" diff "$MODEL" "$WORK/opt.onnx" --json >"$WORK/out.json" 2>&1
check "diff with the optimized model" 1 $?
if "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); k=[x["kind"] for x in d["differences"]]; assert "node_removed" in k' "$WORK/out.json"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL: diff --json lists no removed node"
fi

# Inputs that do not correspond: exit 2, one line naming the input.
"$ONNXTOOL" compare "$MODEL" "$SOURCE_DIR/testdata/tiny_cnn.onnx" >"$WORK/out" 2>"$WORK/err"
check "compare of unrelated models" 2 $?
[[ $(grep -c '' "$WORK/err") -eq 1 ]] && grep -q "input" "$WORK/err" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: mismatch message: $(cat "$WORK/err")"; }

echo "$passed passed, $failed failed"
finish "$failed"
