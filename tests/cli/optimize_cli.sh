#!/usr/bin/env bash
# `onnxtool optimize` from the command line: the pass list; bad input (unknown pass, cyclic
# graph, contradicting --fix-input-shape, invalid model without --force, output == input) exits 1 or
# 2 with one stderr line and writes nothing; an unsorted model is sorted, check says how, optimize
# reports the move and diff sees it; a missing external-data file is one grouped finding in
# check; optimize lists only the passes that changed something; on the real models the
# output passes `check`, --verify holds, a second optimization is byte-identical (idempotent) and
# the bytes do not depend on the thread count.
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_CACHE_DIR (real models under models/).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_work optimize

# --- the pass list
n=$("$ONNXTOOL" optimize --list-passes | grep -c '')
if [[ $n -ge 15 ]]; then ok; else fail "--list-passes lists $n passes"; fi
if "$ONNXTOOL" optimize --list-passes --json | "$PYTHON" -c 'import json,sys; d=json.load(sys.stdin); assert all(p["doc"] for p in d["passes"])'; then ok; else fail "--list-passes --json"; fi

TINY=$SOURCE_DIR/testdata/tiny_cnn.onnx
expect_tool "unknown pass" "2" "fuse_conv_batchnorm" -- optimize "$TINY" -o "$OUT/o.onnx" --passes fold_constants,no_such_pass
expect_tool "unknown skipped pass" "2" "no_such_pass" -- optimize "$TINY" -o "$OUT/o.onnx" --skip no_such_pass
expect_tool "contradicting input shape" "2" "image" -- optimize "$TINY" -o "$OUT/o.onnx" --fix-input-shape image=1,3,16,16
expect_tool "input shape of a missing input" "2" "nope" -- optimize "$TINY" -o "$OUT/o.onnx" --fix-input-shape nope=1
expect_tool "malformed input shape" "2" "--fix-input-shape" -- optimize "$TINY" -o "$OUT/o.onnx" --fix-input-shape image=1,x
expect_tool "output is the input" "2" "input model itself" -- optimize "$TINY" -o "$TINY"
expect_tool "missing model" "2" "missing.onnx" -- optimize "$WORK/missing.onnx" -o "$OUT/o.onnx"

# --- models made with Debian's python3-onnx: cyclic, invalid, unsorted
if "$PYTHON" -c 'import onnx' 2>/dev/null; then
  "$PYTHON" - "$WORK" <<'EOF'
import sys
import onnx
from onnx import helper, TensorProto
work = sys.argv[1]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
def save(nodes, name, opset=13):
    g = helper.make_graph(nodes, name, [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, f"{work}/{name}.onnx")
# a cycle: a = Add(x, b); b = Relu(a); y = Identity(a)
save([helper.make_node("Add", ["x", "b"], ["a"], name="A"), helper.make_node("Relu", ["a"], ["b"], name="B"),
      helper.make_node("Identity", ["a"], ["y"], name="C")], "cyclic")
# invalid: an unknown attribute on Relu
save([helper.make_node("Relu", ["x"], ["y"], name="R", bogus=3)], "invalid")
# unsorted but acyclic: y = Neg(t); t = Relu(x)
save([helper.make_node("Neg", ["t"], ["y"], name="N"), helper.make_node("Relu", ["x"], ["t"], name="R")], "unsorted")
EOF
  expect_tool "cyclic graph" "1 2" "cycle" -- optimize "$WORK/cyclic.onnx" -o "$OUT/o.onnx" --force
  expect_tool "invalid model" "1" "--force" -- optimize "$WORK/invalid.onnx" -o "$OUT/o.onnx"
  # --force optimizes it, and the write gate still refuses what check rejects: nothing written.
  expect_tool "--force still writes nothing invalid" "1" "fails onnxtool check" -- \
    optimize "$WORK/invalid.onnx" -o "$WORK/forced.onnx" --force
  [[ -e $WORK/forced.onnx ]] && fail "--force wrote an invalid model" || ok
  if "$ONNXTOOL" optimize "$WORK/unsorted.onnx" -o "$WORK/sorted.onnx" >/dev/null 2>&1 &&
     "$ONNXTOOL" check "$WORK/sorted.onnx" >/dev/null 2>&1; then ok; else fail "an unsorted model is sorted, and passes check"; fi
  # check says how to fix the order; optimize says what the sort did; diff sees the move.
  "$ONNXTOOL" check "$WORK/unsorted.onnx" >"$WORK/stdout" 2>&1
  [[ $? == 1 ]] && grep -q "optimize .* --passes sort_topologically" "$WORK/stdout" && ok ||
    fail "check of an unsorted model gives no hint: $(cat "$WORK/stdout")"
  expect_tool "sort_topologically reports the move" "0" "sort_topologically: 1 node reordered" -- \
    optimize "$WORK/unsorted.onnx" -o "$WORK/sorted_only.onnx" --passes sort_topologically
  expect_tool "diff of the sorted model" "0" "1 nodes listed in another order" -- diff "$WORK/unsorted.onnx" "$WORK/sorted_only.onnx"
  expect_tool "the summary of unchanged passes" "0" "other passes changed nothing" -- optimize "$WORK/unsorted.onnx" -o "$WORK/sorted.onnx"
  grep -q ": 0 removed" "$WORK/stdout" && fail "optimize still prints all-zero pass lines" || ok
else
  missing_data "python3-onnx (cyclic/invalid/unsorted models)"
fi

# A missing external-data file: one error per tensor, grouped into two lines by check.
mkdir -p "$WORK/ext"
if "$ONNXTOOL" convert "$TINY" -o "$WORK/ext/m.onnx" --external-data --size-threshold 16 >/dev/null 2>&1; then
  rm -f "$WORK"/ext/*.data
  "$ONNXTOOL" check "$WORK/ext/m.onnx" >"$WORK/stdout" 2>&1
  n=$(grep -c "^error tensor.external-data" "$WORK/stdout")
  [[ $n == 2 ]] && grep -q "the same for [0-9]* more" "$WORK/stdout" && ok ||
    fail "missing external data: $n error lines, expected the first and one for the rest: $(head -c 600 "$WORK/stdout")"
else
  fail "convert --external-data of $TINY"
fi

# --verify beyond tolerance (rtol 0, atol 0: folding BatchNormalization into Conv reassociates
# float operations): exit 1, nothing written.
CLS=$CACHE_DIR/models/ch_ppocr_mobile_v2.0_cls_infer.onnx
if [[ -f $CLS ]]; then
  expect_tool "--verify beyond tolerance" "1" "beyond tolerance" -- optimize "$CLS" -o "$OUT/o.onnx" --rtol 0 --atol 0 --fix-input-shape x=1,3,48,192
  # --fix-input-shape stores the inferred shapes as value_info.
  "$ONNXTOOL" optimize "$CLS" -o "$WORK/fixed.onnx" --fix-input-shape x=1,3,48,192 >/dev/null 2>&1
  if "$PYTHON" -c 'import onnx,sys; m=onnx.load(sys.argv[1]); assert len(m.graph.value_info) > 10' "$WORK/fixed.onnx"; then ok; else fail "--fix-input-shape: no value_info stored"; fi
else
  missing_data "$CLS"
fi

# --- real models: check passes, --verify, idempotent, thread-independent bytes
for m in ch_PP-OCRv4_det_infer ch_PP-OCRv4_rec_infer ch_ppocr_mobile_v2.0_cls_infer silero_vad_legacy silero_vad_v5 silero_vad_v6; do
  model=$CACHE_DIR/models/$m.onnx
  if [[ ! -f $model ]]; then
    missing_data "$model"
    continue
  fi
  shapes=()
  inputs=()  # verification inputs of the plain runs: random unless the model needs real ones
  case $m in
    ch_PP-OCRv4_det_infer) shapes=(--fix-input-shape x=1,3,96,128) ;;
    ch_PP-OCRv4_rec_infer) shapes=(--fix-input-shape x=1,3,48,160) ;;
    ch_ppocr_mobile_v2.0_cls_infer) shapes=(--fix-input-shape x=1,3,48,192) ;;
    silero_vad_*)
      # Silero needs sr = 16000 (random integers would pick no valid branch): real-shaped inputs.
      mkdir -p "$WORK/vad_$m"
      "$PYTHON" "$SOURCE_DIR/tests/make_vad_feed.py" "$WORK/vad_$m" "$m"
      shapes=(--inputs "$WORK/vad_$m")
      inputs=("${shapes[@]}") ;;
  esac
  if ! OMP_NUM_THREADS=1 "$ONNXTOOL" optimize "$model" -o "$WORK/$m.1.onnx" "${inputs[@]}" >/dev/null 2>"$WORK/stderr"; then
    fail "$m: optimize: $(cat "$WORK/stderr")"
    continue
  fi
  OMP_NUM_THREADS=2 "$ONNXTOOL" optimize "$model" -o "$WORK/$m.2.onnx" "${inputs[@]}" >/dev/null 2>&1
  if cmp -s "$WORK/$m.1.onnx" "$WORK/$m.2.onnx"; then ok; else fail "$m: output bytes depend on the thread count"; fi
  "$ONNXTOOL" optimize "$WORK/$m.1.onnx" -o "$WORK/$m.again.onnx" "${inputs[@]}" >/dev/null 2>&1
  if cmp -s "$WORK/$m.1.onnx" "$WORK/$m.again.onnx"; then ok; else fail "$m: optimizing twice changes the model (not idempotent)"; fi
  if "$ONNXTOOL" check "$WORK/$m.1.onnx" >/dev/null 2>&1; then ok; else fail "$m: the optimized model fails check"; fi
  # --verify on random inputs (symbolic image sizes fixed by --fix-input-shape).
  if "$ONNXTOOL" optimize "$model" -o "$WORK/$m.v.onnx" "${shapes[@]}" >"$WORK/stdout" 2>"$WORK/stderr"; then
    ok
    echo "$m: $(grep '^nodes' "$WORK/stdout")"
  else
    fail "$m: --verify: $(cat "$WORK/stderr")"
  fi
done

finish
