#!/usr/bin/env bash
# `onnxtool convert --opset`: conversions judged by onnxruntime-node (tests/ort/convert_vs_ort.py:
# real models up, down and round trip within rtol 1e-5; every backend-suite node model up to the
# newest opset onnxruntime runs and down to its lowest reachable opset, against the reference
# outputs), a round trip that `onnxtool diff` finds equal, and the bad inputs: an opset outside
# 7-28, a model already at the target (a note, no file), a node with no equivalent at the target
# (exit 1 naming it, no file), exclusive flags; the input is never touched.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR, ONNXTOOL_BACKEND_DATA.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MODEL=$MODELS/ch_PP-OCRv4_rec_infer.onnx
needs_file "$MODEL"
needs_python onnx numpy
command -v node >/dev/null || skip_all "node"
make_work convert

before=$(sha256sum "$MODEL")
# Under AddressSanitizer every onnxtool process starts and ends slowly: a fifth of the backend
# cases (the Release build runs them all).
if ldd "$ONNXTOOL" 2>/dev/null | grep -q libasan; then export CONVERT_CASE_STRIDE=5; fi

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
"$ONNXTOOL" compare "$MODEL" "$WORK/up.onnx" --random --seed 3 --shape x=1,3,48,320 --rtol 1e-5 >"$WORK/cmp" 2>&1 &&
  ok || fail "compare 9 vs 21 in onnxtool: $(tail -3 "$WORK/cmp")"

C=(convert "$MODEL" -o "$OUT/m.onnx")
expect_tool "opset 6" 2 "" -- "${C[@]}" --opset 6
expect_tool "opset 29" 2 "" -- "${C[@]}" --opset 29
expect_tool "already at opset 9" 0 "already at opset 9" -- "${C[@]}" --opset 9
[[ -z $(ls -A "$OUT") ]] && ok || fail "a file was written for a model already at the target"
expect_tool "no equivalent at opset 7" 1 "" -- "${C[@]}" --opset 7
grep -qE "node .*no equivalent at opset 7" "$WORK/stderr" && ok || fail "the refusal does not name the node: $(cat "$WORK/stderr")"
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

[[ $(sha256sum "$MODEL") == "$before" ]] && ok || fail "the input model changed"
finish
