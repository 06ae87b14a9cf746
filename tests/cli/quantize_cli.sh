#!/usr/bin/env bash
# `onnxtool quantize` from the command line: the accuracy, size and runtime checks against
# onnxruntime-node on the real models (tests/ort/quantize_vs_ort.py), calibration from ONNX
# test_data_set_N folders, the report files, and every bad input of issue 6 (empty or mismatched
# calibration folder: names, dtypes, shapes; NaN-only data; an op type or node name that does not
# exist; exclusive flags): exit 2 (or 1) with one line on stderr, no output file, input untouched.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
set -u
: "${ONNXTOOL:?set ONNXTOOL to the onnxtool binary}"
SOURCE_DIR=${ONNXTOOL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$SOURCE_DIR/tests/skip_lib.sh"
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$SOURCE_DIR/.cache}
PYTHON=/usr/bin/python3
MODEL=$CACHE_DIR/models/ch_ppocr_mobile_v2.0_cls_infer.onnx
if [[ ! -f $MODEL ]] || ! "$PYTHON" -c 'import numpy' 2>/dev/null; then
  skip_all "$MODEL or python3-numpy missing (testdata/fetch_models.sh)"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool_quantize.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
# expect LABEL RC -- CMD...: exit code; one stderr line when failing; no output file when failing.
expect() {
  local label=$1 rc=$2
  shift 3
  rm -f "$WORK/out.onnx"
  "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  local got=$?
  [[ $got -eq $rc ]] || { bad "$label: exit $got, expected $rc ($(head -c 300 "$WORK/stderr"))"; return; }
  if [[ $rc -ne 0 ]]; then
    [[ $(wc -l <"$WORK/stderr") -eq 1 ]] || { bad "$label: stderr is not one line: $(cat "$WORK/stderr")"; return; }
    [[ ! -e $WORK/out.onnx ]] || { bad "$label: an output file was left"; return; }
  fi
  ok
}
before=$(sha256sum "$MODEL")

# Calibration folders made here: good samples, and the bad variants.
"$PYTHON" - "$WORK" <<'EOF'
import os, sys
import numpy as np
w = sys.argv[1]
rng = np.random.default_rng(1)
def sample(d, name="x", array=None):
    os.makedirs(d, exist_ok=True)
    a = rng.uniform(-1, 1, (1, 3, 48, 192)).astype(np.float32) if array is None else array
    np.save(os.path.join(d, name + ".npy"), a)
for k in range(3):
    sample(f"{w}/good/s{k}")
open(f"{w}/good/s0/notes.txt", "w").write("other files are ignored\n")
os.makedirs(f"{w}/empty")
sample(f"{w}/wrong_name/s0", name="image")
sample(f"{w}/wrong_dtype/s0", array=rng.uniform(-1, 1, (1, 3, 48, 192)))  # float64
sample(f"{w}/wrong_shape/s0", array=rng.uniform(-1, 1, (3, 48, 192)).astype(np.float32))
sample(f"{w}/nan_only/s0", array=np.full((1, 3, 48, 192), np.nan, np.float32))
sample(f"{w}/nan_only/s1", array=np.full((1, 3, 48, 192), np.nan, np.float32))
# An all-zero first sample (Silero VAD's usual initial state) crashed the histogram; constant,
# NaN-holding and Inf-holding samples follow it.
sample(f"{w}/zero_first/s0", array=np.zeros((1, 3, 48, 192), np.float32))
sample(f"{w}/zero_first/s1")
sample(f"{w}/zero_first/s2", array=np.full((1, 3, 48, 192), 0.5, np.float32))
odd = rng.uniform(-1, 1, (1, 3, 48, 192)).astype(np.float32)
odd[0, 0, 0, :3] = [np.nan, np.inf, -np.inf]
sample(f"{w}/zero_first/s3", array=odd)
EOF

Q=("$ONNXTOOL" quantize "$MODEL" -o "$WORK/out.onnx")
expect "static on good samples" 0 -- "${Q[@]}" --mode static --calib-data "$WORK/good" --report "$WORK/report.md"
grep -q "| Conv |" "$WORK/report.md" && ok || bad "the markdown report lists no Conv node"
expect "json report" 0 -- "${Q[@]}" --mode static --calib-data "$WORK/good" --report "$WORK/report.json"
"$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
n = [x for x in d["nodes"] if x["op_type"] == "Conv"]
assert n and all(x["scale"] > 0 for x in d["nodes"]), "no Conv entries or a non-positive scale"
assert all("sqnr_db" in x and "cosine" in x for x in n)
assert d["output_cosine"] is not None and d["calibration"]["samples"] == 3
' "$WORK/report.json" && ok || bad "the JSON report lacks per-node ranges and errors"
for method in minmax entropy percentile; do
  expect "all-zero first sample ($method)" 0 -- "${Q[@]}" --mode static --calib-data "$WORK/zero_first" --calib-method "$method"
done
expect "empty calibration folder" 2 -- "${Q[@]}" --mode static --calib-data "$WORK/empty"
expect "missing calibration folder" 2 -- "${Q[@]}" --mode static --calib-data "$WORK/nonexistent"
expect "static without --calib-data" 2 -- "${Q[@]}" --mode static
expect "wrong input name" 2 -- "${Q[@]}" --mode static --calib-data "$WORK/wrong_name"
expect "wrong dtype" 2 -- "${Q[@]}" --mode static --calib-data "$WORK/wrong_dtype"
expect "wrong shape" 2 -- "${Q[@]}" --mode static --calib-data "$WORK/wrong_shape"
expect "NaN-only data" 2 -- "${Q[@]}" --mode static --calib-data "$WORK/nan_only"
grep -q "NaN" "$WORK/stderr" && ok || bad "the NaN-only error does not say NaN: $(cat "$WORK/stderr")"
expect "unknown op type" 2 -- "${Q[@]}" --mode dynamic --op-types Foo
expect "op type not in the model" 2 -- "${Q[@]}" --mode dynamic --op-types MatMul
expect "unknown node name" 2 -- "${Q[@]}" --mode dynamic --exclude-nodes no_such_node
expect "--auto-exclude without samples" 2 -- "${Q[@]}" --mode dynamic --auto-exclude
expect "bad --mode" 2 -- "${Q[@]}" --mode fast
expect "bad --calib-method" 2 -- "${Q[@]}" --mode static --calib-data "$WORK/good" --calib-method median
expect "output is the input" 2 -- "$ONNXTOOL" quantize "$MODEL" -o "$MODEL" --mode dynamic

# ONNX test_data_set_N folders (input_K.pb TensorProtos) as calibration samples; other files
# beside them are ignored.
if "$PYTHON" - "$WORK" <<'EOF2'
import os, sys
import numpy as np
from onnx import numpy_helper
w = sys.argv[1]
rng = np.random.default_rng(2)
for k in range(2):
    d = f"{w}/pb/test_data_set_{k}"
    os.makedirs(d)
    t = numpy_helper.from_array(rng.uniform(-1, 1, (1, 3, 48, 192)).astype(np.float32), "x")
    open(f"{d}/input_0.pb", "wb").write(t.SerializeToString())
open(f"{w}/pb/README", "w").write("not a sample\n")
EOF2
then
  expect "test_data_set folders" 0 -- "${Q[@]}" --mode static --calib-data "$WORK/pb"
  grep -q "calibrated on 2 samples" "$WORK/stdout" && ok || bad "not calibrated on the 2 test_data_set folders: $(cat "$WORK/stdout")"
  "$ONNXTOOL" check "$WORK/out.onnx" >/dev/null 2>&1 && ok || bad "the model quantized from .pb samples does not pass check"
fi

# Dynamic quantization of an opset-9 model moves it to opset 11 and says so.
expect "dynamic on an opset-9 model" 0 -- "${Q[@]}" --mode dynamic --per-channel
grep -q "from opset 9 to 11" "$WORK/stdout" && ok || bad "no note about the opset change: $(cat "$WORK/stdout")"
"$ONNXTOOL" check "$WORK/out.onnx" >/dev/null 2>&1 && ok || bad "the dynamic model does not pass check"

[[ $(sha256sum "$MODEL") == "$before" ]] && ok || bad "the input model changed"

# Accuracy, size and agreement with onnxruntime on the real models.
if command -v node >/dev/null && [[ -f $CACHE_DIR/ort/node_modules/onnxruntime-node/package.json ]]; then
  "$PYTHON" "$SOURCE_DIR/tests/ort/quantize_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" >"$WORK/ort.log" 2>&1
  if judged $?; then
    ok
  else
    bad "quantized models against onnxruntime:"
  fi
  cat "$WORK/ort.log"
else
  missing_data "onnxruntime-node: the accuracy checks"
fi

echo "$passed passed, $failed failed"
finish "$failed"
