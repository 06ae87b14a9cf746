#!/usr/bin/env bash
# `onnxtool convert --opset`: conversions judged by onnxruntime-node (tests/ort/convert_vs_ort.py:
# real models up, down and round trip within rtol 1e-5; every backend-suite node model up to the
# newest opset onnxruntime runs and down to its lowest reachable opset, against the reference
# outputs), a round trip that `onnxtool diff` finds equal, and the bad inputs: an opset outside
# 7-28, a model already at the target (a note, no file), a node with no equivalent at the target
# (exit 1 naming it, no file), exclusive flags; the input is never touched. Every real model the
# tests fetch, to opsets 7, 9, 11 and 12: written and valid at its opset, or refused naming the node.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR, ONNXTOOL_BACKEND_DATA.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MODEL=$MODELS/ch_PP-OCRv4_rec_infer.onnx
needs_file "$MODEL"
needs_python onnx numpy
command -v node >/dev/null || skip_all "node"
make_work convert

before=$(sha256sum "$MODEL")
# Under AddressSanitizer every onnxtool process starts and ends slowly: a tenth of the backend
# cases (the Release build runs them all).
((SANITIZED)) && export CONVERT_CASE_STRIDE=10

"$PYTHON" "$SOURCE_DIR/tests/ort/convert_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" "$BACKEND" >"$WORK/ort.log" 2>&1
if judged $?; then
  ok
else
  fail "conversions against onnxruntime:"
  grep -E "^FAIL|Traceback|Error" "$WORK/ort.log" | head -20
fi
grep -E "^(real models|backend suite|  )" "$WORK/ort.log"

# Round trip: diff finds no difference (PaddleOCR det, opset 11 -> 17 -> 11: both at IR 8; the
# rec model's negative Reduce axes, which opset 9 does not allow, would come back normalized).
DET=$CACHE_DIR/models/ch_PP-OCRv4_det_infer.onnx
"$ONNXTOOL" convert "$DET" -o "$WORK/det17.onnx" --opset 17 >/dev/null 2>&1
"$ONNXTOOL" convert "$WORK/det17.onnx" -o "$WORK/det11.onnx" --opset 11 >/dev/null 2>&1
"$ONNXTOOL" diff "$DET" "$WORK/det11.onnx" >"$WORK/diff" 2>&1 && ok || fail "diff of the 11 -> 17 -> 11 round trip: $(head -3 "$WORK/diff")"
"$ONNXTOOL" convert "$MODEL" -o "$WORK/up.onnx" --opset 21 >/dev/null 2>&1
# Up, then compare in onnxtool's own runner too.
"$ONNXTOOL" compare "$MODEL" "$WORK/up.onnx" --random --seed 3 --input-shape x=1,3,48,320 --rtol 1e-5 >"$WORK/cmp" 2>&1 &&
  ok || fail "compare 9 vs 21 in onnxtool: $(tail -3 "$WORK/cmp")"

C=(convert "$MODEL" -o "$OUT/m.onnx")
expect_tool "opset 6" 2 "" -- "${C[@]}" --opset 6
expect_tool "opset 29" 2 "" -- "${C[@]}" --opset 29
expect_tool "already at opset 9" 0 "already at opset 9" -- "${C[@]}" --opset 9
[[ -z $(ls -A "$OUT") ]] && ok || fail "a file was written for a model already at the target"
# Silero v5's STFT padding is a ConstantOfShape, which opset 9 introduced.
SILERO=$MODELS/silero_vad_v5.onnx
if [[ -f $SILERO ]]; then
  expect_tool "no equivalent at opset 7" 1 "" -- convert "$SILERO" -o "$OUT/m.onnx" --opset 7 --no-verify
  grep -qE "node .*ConstantOfShape.*no equivalent at opset 7: the operator was introduced in opset 9" "$WORK/stderr" &&
    ok || fail "the refusal does not name the node and why: $(cat "$WORK/stderr")"
else
  missing_data "$SILERO"
fi
SCAN=$BACKEND/node/test_scan_sum/model.onnx
if [[ -f $SCAN ]]; then
  expect_tool "Scan-8 up" 1 "" -- convert "$SCAN" -o "$OUT/m.onnx" --opset 13
  grep -q "Scan" "$WORK/stderr" && ok || fail "the Scan refusal does not say why"
else
  missing_data "$SCAN"
fi
expect_tool "--to-fp16 with --to-fp32" 2 "" -- "${C[@]}" --to-fp16 --to-fp32
expect_tool "--keep-io-types alone" 2 "" -- "${C[@]}" --keep-io-types
expect_tool "opset 13" 0 "" -- "${C[@]}" --opset 13
[[ -f $OUT/m.onnx ]] && ok || fail "opset 13: no output file"
"$ONNXTOOL" convert "$MODEL" -o "$WORK/j.onnx" --opset 13 --json >"$WORK/j.json" 2>&1
"$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["opset"]["from"] == 9 and d["opset"]["to"] == 13' "$WORK/j.json" &&
  ok || fail "--json does not report the opset change: $(head -c 300 "$WORK/j.json")"

# Every real model the tests fetch (testdata/models.sha256), and the benchmark's
# (bench/models.sha256) where they are fetched, down (or up) to opsets 7, 9, 11 and 12: a written
# model passes `onnxtool check` at its own opset (ISNet, stored out of order, is sorted on the
# way); a refusal is exit 1 with one line naming the node and why, or, for a model that fails
# check already (ddddocr rec's stale output shape), the write gate's. Not verified on the runner
# here (the ISNet models take a minute each); the numbers of conversions are judged above and by
# the differential test.
error_rules() { "$ONNXTOOL" check "$1" --max-errors 1000000 2>&1 | awk '$1 == "error" {print $2}' | sort -u | tr '\n' ' '; }
real_models=()
while read -r _ file _; do
  [[ $file == models/*.onnx ]] && real_models+=("$CACHE_DIR/$file")
done < <(grep -hv '^#' "$SOURCE_DIR/testdata/models.sha256")
[[ ${#real_models[@]} -ge 8 ]] && ok || fail "testdata/models.sha256 lists ${#real_models[@]} models, expected 8 or more"
for model in "${real_models[@]}"; do [[ -f $model ]] || missing_data "$model"; done
while read -r _ file _; do
  [[ $file == models/*.onnx && -f $CACHE_DIR/$file && " ${real_models[*]} " != *" $CACHE_DIR/$file "* ]] &&
    real_models+=("$CACHE_DIR/$file")
done < <(grep -hv '^#' "$SOURCE_DIR/bench/models.sha256")
for model in "${real_models[@]}"; do
  name=$(basename "$model" .onnx)
  [[ -f $model ]] || continue
  own_errors=$(error_rules "$model")
  for opset in 7 9 11 12; do
    rm -f "$WORK/real.onnx"
    "$ONNXTOOL" convert "$model" -o "$WORK/real.onnx" --opset "$opset" --no-verify >"$WORK/stdout" 2>"$WORK/stderr"
    rc=$?
    if [[ $rc -eq 0 && ! -f $WORK/real.onnx ]]; then
      grep -q "already at opset $opset" "$WORK/stdout" "$WORK/stderr" && ok || fail "$name -> opset $opset: exit 0 and no file"
      echo "real $name -> $opset: already at opset $opset"
    elif [[ $rc -eq 0 ]]; then
      errors=$(error_rules "$WORK/real.onnx")
      if [[ -z $errors ]]; then
        ok
        echo "real $name -> $opset: written, check ok"
      else
        fail "$name -> opset $opset: the written model does not pass check: ${errors}(the original: ${own_errors:-valid})"
      fi
    elif [[ $rc -eq 1 && -n $own_errors ]] && grep -q "the result fails onnxtool check" "$WORK/stderr"; then
      ok
      echo "real $name -> $opset: refused, the original fails check already (${own_errors% })"
    elif judge_exit "$name -> opset $opset" 1 "$rc" "$WORK/stderr" "no equivalent at opset $opset"; then
      if grep -qE "^onnxtool convert: node .*no equivalent at opset $opset: " "$WORK/stderr"; then
        ok
        echo "real $name -> $opset: refused: $(grep -v ': progress: ' "$WORK/stderr" | sed 's/^onnxtool convert: //')"
      else
        fail "$name -> opset $opset: the refusal does not name the node: $(cat "$WORK/stderr")"
      fi
    fi
  done
done
# The issue's model: its broadcasting Max (operand [1,1,1,1]) needs an explicit broadcast at
# opset 7, and the result computes what the original does.
OWW=$MODELS/bench/oww_embedding.onnx
if [[ -f $OWW ]]; then
  expect_tool "oww_embedding to opset 7" 0 "" -- convert "$OWW" -o "$OUT/oww7.onnx" --opset 7 --input-shape input_1=1,76,32,1
  "$ONNXTOOL" compare "$OWW" "$OUT/oww7.onnx" --random --seed 5 --input-shape input_1=2,76,32,1 --rtol 1e-5 >"$WORK/cmp" 2>&1 &&
    ok || fail "oww_embedding at opset 7 departs from the original: $(tail -3 "$WORK/cmp")"
else
  missing_data "$OWW"
fi

[[ $(sha256sum "$MODEL") == "$before" ]] && ok || fail "the input model changed"
finish
