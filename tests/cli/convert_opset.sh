#!/usr/bin/env bash
# `onnxtool convert --opset`: conversions judged by onnxruntime-node (tests/ort/convert_vs_ort.py:
# real models up, down and round trip within rtol 1e-5; every backend-suite node model up to the
# newest opset onnxruntime runs and down to its lowest reachable opset, against the reference
# outputs), a round trip that `onnxtool diff` finds equal, and the bad inputs: an opset outside
# 7-28, a model already at the target (a note, no file), a node with no equivalent at the target
# (exit 1 naming it, no file), exclusive flags; the input is never touched.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR, ONNXTOOL_BACKEND_DATA.
set -u
: "${ONNXTOOL:?set ONNXTOOL to the onnxtool binary}"
SOURCE_DIR=${ONNXTOOL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$SOURCE_DIR/tests/skip_lib.sh"
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$SOURCE_DIR/.cache}
BACKEND=${ONNXTOOL_BACKEND_DATA:-/usr/share/libonnx-testdata/data}
PYTHON=/usr/bin/python3
MODEL=$CACHE_DIR/models/ch_PP-OCRv4_rec_infer.onnx
if [[ ! -f $MODEL ]] || ! "$PYTHON" -c 'import onnx, numpy' 2>/dev/null || ! command -v node >/dev/null; then
  skip_all "$MODEL, node or python3-onnx missing (testdata/fetch_models.sh)"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool_convert.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
# expect LABEL RC FILE_SHOULD_EXIST(0|1) -- CMD...: exit code, one stderr line when failing, output file or not.
expect() {
  local label=$1 rc=$2 exists=$3
  shift 4
  rm -f "$WORK/out.onnx"
  "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  local got=$?
  [[ $got -eq $rc ]] || { bad "$label: exit $got, expected $rc ($(head -c 300 "$WORK/stderr"))"; return; }
  if [[ $rc -ne 0 && $(wc -l <"$WORK/stderr") -ne 1 ]]; then bad "$label: stderr is not one line"; return; fi
  if [[ $exists -eq 1 && ! -f $WORK/out.onnx ]]; then bad "$label: no output file"; return; fi
  if [[ $exists -eq 0 && -f $WORK/out.onnx ]]; then bad "$label: an output file was left"; return; fi
  ok
}

before=$(sha256sum "$MODEL")
# Under AddressSanitizer every onnxtool process starts and ends slowly: a fifth of the backend
# cases (the Release build runs them all).
if ldd "$ONNXTOOL" 2>/dev/null | grep -q libasan; then export CONVERT_CASE_STRIDE=5; fi

"$PYTHON" "$SOURCE_DIR/tests/ort/convert_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" "$BACKEND" >"$WORK/ort.log" 2>&1
if judged $?; then
  ok
else
  bad "conversions against onnxruntime:"
  grep -E "^FAIL|Traceback|Error" "$WORK/ort.log" | head -20
fi
grep -E "^(real models|backend suite|  )" "$WORK/ort.log"

# Round trip: diff finds no difference (PaddleOCR det, opset 11 -> 17 -> 11: both at IR 8; the
# rec model's negative Reduce axes, which opset 9 does not allow, would come back normalized).
DET=$CACHE_DIR/models/ch_PP-OCRv4_det_infer.onnx
"$ONNXTOOL" convert "$DET" -o "$WORK/det17.onnx" --opset 17 >/dev/null 2>&1
"$ONNXTOOL" convert "$WORK/det17.onnx" -o "$WORK/det11.onnx" --opset 11 >/dev/null 2>&1
"$ONNXTOOL" diff "$DET" "$WORK/det11.onnx" >"$WORK/diff" 2>&1 && ok || bad "diff of the 11 -> 17 -> 11 round trip: $(head -3 "$WORK/diff")"
"$ONNXTOOL" convert "$MODEL" -o "$WORK/up.onnx" --opset 21 >/dev/null 2>&1
# Up, then compare in onnxtool's own runner too.
"$ONNXTOOL" compare "$MODEL" "$WORK/up.onnx" --random --seed 3 --shape x=1,3,48,320 --rtol 1e-5 >"$WORK/cmp" 2>&1 &&
  ok || bad "compare 9 vs 21 in onnxtool: $(tail -3 "$WORK/cmp")"

expect "opset 6" 2 0 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/out.onnx" --opset 6
expect "opset 29" 2 0 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/out.onnx" --opset 29
expect "already at opset 9" 0 0 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/out.onnx" --opset 9
grep -q "already at opset 9" "$WORK/stderr" && ok || bad "no note for a model already at the target"
expect "no equivalent at opset 7" 1 0 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/out.onnx" --opset 7
grep -qE "node .*no equivalent at opset 7" "$WORK/stderr" && ok || bad "the refusal does not name the node: $(cat "$WORK/stderr")"
SCAN=$BACKEND/node/test_scan_sum/model.onnx
if [[ -f $SCAN ]]; then
  expect "Scan-8 up" 1 0 -- "$ONNXTOOL" convert "$SCAN" -o "$WORK/out.onnx" --opset 13
  grep -q "Scan" "$WORK/stderr" && ok || bad "the Scan refusal does not say why"
else
  missing_data "$SCAN"
fi
expect "--to-fp16 with --to-fp32" 2 0 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/out.onnx" --to-fp16 --to-fp32
expect "--keep-io-types alone" 2 0 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/out.onnx" --keep-io-types
expect "opset 13" 0 1 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/out.onnx" --opset 13
"$ONNXTOOL" convert "$MODEL" -o "$WORK/j.onnx" --opset 13 --json >"$WORK/j.json" 2>&1
"$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["opset"]["from"] == 9 and d["opset"]["to"] == 13' "$WORK/j.json" &&
  ok || bad "--json does not report the opset change: $(head -c 300 "$WORK/j.json")"

[[ $(sha256sum "$MODEL") == "$before" ]] && ok || bad "the input model changed"
echo "$passed passed, $failed failed"
finish "$failed"
