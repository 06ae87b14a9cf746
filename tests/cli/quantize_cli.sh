#!/usr/bin/env bash
# `onnxtool quantize` from the command line: the accuracy, size and runtime checks against
# onnxruntime-node on the real models (tests/ort/quantize_vs_ort.py) and on generated 1-D Convs
# (tests/ort/conv_windows_vs_ort.py), calibration from ONNX
# test_data_set_N folders, the report files, and every bad input of issue 6 (empty or mismatched
# calibration folder: names, dtypes, shapes; NaN-only data; an op type or node name that does not
# exist; exclusive flags): exit 2 (or 1) with one line on stderr, no output file, input untouched.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MODEL=$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx
needs_file "$MODEL"
needs_python numpy
make_work quantize
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

Q=("$ONNXTOOL" quantize "$MODEL" -o "$OUT/m.onnx")
PLAIN=("${Q[@]}")
# The classifier's Convs are estimated slower in int8 (depthwise and a 3-channel stem, which
# onnxruntime's integer kernels run slower than its float ones; measured 0.89x): the plain
# command leaves it as it came, saying why, and --op-types Conv forces them, as below.
expect "plain static on the classifier" 0 "estimated slower quantized" -- "${Q[@]}" --mode static --inputs "$WORK/good"
grep -q "nothing quantized" "$WORK/stdout" && ok || fail "plain static on the classifier quantized something: $(cat "$WORK/stdout")"
"$ONNXTOOL" diff "$MODEL" "$OUT/m.onnx" >/dev/null && ok || fail "the classifier left float is not written as it came"
Q=("$ONNXTOOL" quantize "$MODEL" -o "$OUT/m.onnx" --op-types Conv)
expect "static on good samples" 0 "" -- "${Q[@]}" --mode static --inputs "$WORK/good" --report "$WORK/report.md"
grep -q "| Conv |" "$WORK/report.md" && ok || fail "the markdown report lists no Conv node"
expect "json report" 0 "" -- "${Q[@]}" --mode static --inputs "$WORK/good" --report "$WORK/report.json"
"$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
n = [x for x in d["nodes"] if x["op_type"] == "Conv"]
assert n and all(x["scale"] > 0 for x in d["nodes"]), "no Conv entries or a non-positive scale"
assert all("sqnr_db" in x and "cosine" in x for x in n)
# The classifier output is two probabilities: judged by relative error (as sqnr_db), not cosine.
assert d["sqnr_db"] is not None and d["cosine"] is None and d["calibration"]["samples"] == 3
assert all(set(x) == {"node", "op_type", "tensor", "reason"} and x["reason"] for x in d["kept_float"])
' "$WORK/report.json" && ok || fail "the JSON report lacks per-node ranges and errors"
for method in minmax entropy percentile; do
  expect "all-zero first sample ($method)" 0 "" -- "${Q[@]}" --mode static --inputs "$WORK/zero_first" --calib-method "$method"
done
expect "empty calibration folder" 2 "" -- "${Q[@]}" --mode static --inputs "$WORK/empty"
# A Conv whose weight has no elements and an output channel dim of 2^36: one scale per channel
# was allocated (out of memory, then a crash). The op stays float, so nothing is quantized: the
# model is written as it came, exit 0.
EMPTY_W=$ONNXTOOL_SOURCE_DIR/fuzz/regressions/optimize/conv_empty_weight_huge_output_channels
for mode in "dynamic --per-tensor" "dynamic"; do
  # shellcheck disable=SC2086
  expect "empty weight of 2^36 channels ($mode)" 0 "nothing quantized" -- \
    "$ONNXTOOL" quantize "$EMPTY_W" -o "$OUT/e.onnx" --mode $mode --op-types Conv
  "$ONNXTOOL" diff "$EMPTY_W" "$OUT/e.onnx" >/dev/null && ok || fail "empty weight ($mode): the model written differs"
done
expect "missing calibration folder" 2 "" -- "${Q[@]}" --mode static --inputs "$WORK/nonexistent"
expect "static without --inputs" 2 "" -- "${Q[@]}" --mode static
expect "wrong input name" 2 "" -- "${Q[@]}" --mode static --inputs "$WORK/wrong_name"
expect "wrong dtype" 2 "" -- "${Q[@]}" --mode static --inputs "$WORK/wrong_dtype"
expect "wrong shape" 2 "" -- "${Q[@]}" --mode static --inputs "$WORK/wrong_shape"
expect "NaN-only data" 2 "" -- "${Q[@]}" --mode static --inputs "$WORK/nan_only"
grep -q "NaN" "$WORK/stderr" && ok || fail "the NaN-only error does not say NaN: $(cat "$WORK/stderr")"
expect "unknown op type" 2 "" -- "$ONNXTOOL" quantize "$MODEL" -o "$OUT/m.onnx" --mode dynamic --op-types Foo
# --op-types is checked against the model as given: its MatMul, which the preprocessing fuses
# with its Add into a Gemm, is no error (nothing is quantized then, with the reasons).
expect "op type the preprocessing fuses away" 0 "nothing quantized" -- "$ONNXTOOL" quantize "$MODEL" -o "$OUT/m.onnx" \
  --mode dynamic --op-types MatMul
expect "op type not in the model" 2 "the model has no LSTM node" -- "$ONNXTOOL" quantize "$MODEL" -o "$OUT/m.onnx" --mode dynamic --op-types LSTM
expect "unknown node name" 2 "" -- "${Q[@]}" --mode dynamic --exclude-nodes no_such_node
expect "--auto-exclude without samples: random ones" 0 "measured on 4 samples, random (seed 0;" -- \
  "${Q[@]}" --mode dynamic --auto-exclude
expect "bad --mode" 2 "" -- "${Q[@]}" --mode fast
expect "bad --calib-method" 2 "" -- "${Q[@]}" --mode static --inputs "$WORK/good" --calib-method median
expect "output is the input" 2 "" -- "$ONNXTOOL" quantize "$MODEL" -o "$MODEL" --mode dynamic

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
  expect "test_data_set folders" 0 "" -- "${Q[@]}" --mode static --inputs "$WORK/pb"
  grep -q "calibrated on 2 samples" "$WORK/stdout" && ok || fail "not calibrated on the 2 test_data_set folders: $(cat "$WORK/stdout")"
  "$ONNXTOOL" check "$OUT/m.onnx" >/dev/null 2>&1 && ok || fail "the model quantized from .pb samples does not pass check"
fi

# Dynamic quantization of an opset-9 model moves it to opset 11 and says so.
expect "dynamic on an opset-9 model" 0 "" -- "${Q[@]}" --mode dynamic
grep -q "from opset 9 to 11" "$WORK/stdout" && ok || fail "no note about the opset change: $(cat "$WORK/stdout")"
"$ONNXTOOL" check "$OUT/m.onnx" >/dev/null 2>&1 && ok || fail "the dynamic model does not pass check"

# What the plain command decides, and its gates.
expect "--bits 3" 2 "--bits: must be 4 or 8" -- "${PLAIN[@]}" --mode weight-only --bits 3
expect "--block-size 10" 2 "--block-size: must be a power of two" -- "${PLAIN[@]}" --mode weight-only --block-size 10
expect "--bits outside weight-only" 2 "for --mode weight-only" -- "${PLAIN[@]}" --mode dynamic --bits 8
expect "--format matmulnbits with static" 2 "--format must be qdq or qoperator with --mode static" -- "${PLAIN[@]}" --mode static --inputs "$WORK/good" --format matmulnbits
expect "--format qoperator with weight-only" 2 "--format must be qdq or matmulnbits with --mode weight-only" -- "${PLAIN[@]}" --mode weight-only --format qoperator
expect "--format with dynamic" 2 "--format is for --mode static or weight-only" -- "${PLAIN[@]}" --mode dynamic --format matmulnbits
expect "--auto-exclude with weight-only, nothing to quantize" 1 "no MatMul" -- "${PLAIN[@]}" --mode weight-only --inputs "$WORK/good" --auto-exclude
expect "weight-only on a model without MatMul" 0 "nothing quantized" -- "$ONNXTOOL" quantize "$MODEL" -o "$OUT/m.onnx" \
  --mode weight-only
expect "--per-channel with --per-tensor" 2 "exclude each other" -- "${Q[@]}" --mode dynamic --per-channel --per-tensor
expect "--accuracy-outputs naming no output" 2 "no output named 'nope'" -- "${Q[@]}" --mode static --inputs "$WORK/good" \
  --accuracy-outputs nope
# Dynamic mode leaves Conv alone unless --op-types names it (onnxruntime's ConvInteger is slower
# than its float Conv): the classifier's Convs stay float, each with that reason.
expect "plain dynamic on a Conv model" 0 "Conv only when its op type is asked for" -- "$ONNXTOOL" quantize "$MODEL" -o "$OUT/m.onnx" \
  --mode dynamic --json
"$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
convs = [k for k in d["kept_float"] if k["op_type"] == "Conv"]
assert len(convs) > 40 and all("--op-types" in k["reason"] for k in convs), convs[:2]
' "$WORK/stdout" && ok || fail "plain dynamic: the Convs kept float lack their reason"
# --require-speedup gates on the estimate: nothing written below it.
expect "--require-speedup above the estimate" 1 "--require-speedup 100" -- "${Q[@]}" --mode static --inputs "$WORK/good" \
  --no-auto-exclude --require-speedup 100
expect "--require-speedup below the estimate" 0 "estimated speed-up" -- "${Q[@]}" --mode static --inputs "$WORK/good" \
  --no-auto-exclude --require-speedup 0.5
# An explicit --auto-exclude whose target only float reaches fails, naming the target and the
# best score an attempt with something quantized reached; without the flag the same target
# leaves the model as it came, exit 0.
expect "--auto-exclude, target only float reaches" 1 "no quantization reaches --accuracy-target 1" -- "${Q[@]}" --mode static \
  --inputs "$WORK/good" --auto-exclude --accuracy-target 1
grep -q "the best with a node quantized: 0\.[0-9]" "$WORK/stderr" && ok || fail "the failure names no best score: $(cat "$WORK/stderr")"
expect "default target only float reaches" 0 "nothing quantized: no quantization reaches" -- "${Q[@]}" --mode static \
  --inputs "$WORK/good" --accuracy-target 1
"$ONNXTOOL" diff "$MODEL" "$OUT/m.onnx" >/dev/null && ok || fail "a model nothing was quantized in is not written as it came"
# Entropy ranges are measured against the extremes, and the report carries both scores.
expect "entropy calibration" 0 "" -- "${Q[@]}" --mode static --inputs "$WORK/good" --calib-method entropy --no-auto-exclude \
  --json
"$PYTHON" -c '
import json, sys
c = json.load(open(sys.argv[1]))["calibration"]
assert c["method"] == "entropy" and c["method_score"] is not None and c["minmax_score"] is not None, c
assert c["fell_back_to_minmax"] == (c["minmax_score"] > c["method_score"]), c
' "$WORK/stdout" && ok || fail "entropy calibration: no scores of both range choices in the JSON"
# A float16 model (float16 inputs and outputs, as `convert --to-fp16` writes it) is quantized
# from its values: int8 Convs, the float16 interface kept, and the report names the reference.
"$ONNXTOOL" convert "$MODEL" --to-fp16 -o "$WORK/half.onnx" >/dev/null 2>&1 || fail "convert --to-fp16 failed"
"$PYTHON" - "$WORK" <<'EOF3'
import os, sys
import numpy as np
w = sys.argv[1]
rng = np.random.default_rng(5)
for k in range(3):
    os.makedirs(f"{w}/half_samples/s{k}")
    np.save(f"{w}/half_samples/s{k}/x.npy", rng.uniform(-1, 1, (1, 3, 48, 192)).astype(np.float16))
EOF3
expect "float16 model" 0 "" -- "$ONNXTOOL" quantize "$WORK/half.onnx" -o "$OUT/h.onnx" --mode static \
  --inputs "$WORK/half_samples" --no-auto-exclude --op-types Conv --json
"$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["quantized_nodes"] > 40 and d["reference"].startswith("float16"), (d["quantized_nodes"], d["reference"])
' "$WORK/stdout" && ok || fail "float16 model: not quantized, or the reference is not named"
"$ONNXTOOL" inspect "$OUT/h.onnx" | grep -q "x: float16\[" && ok || fail "float16 model: the quantized model's input is not float16"
"$ONNXTOOL" run "$OUT/h.onnx" --inputs "$WORK/half_samples/s0" >/dev/null 2>&1 && ok ||
  fail "float16 model: the quantized model does not run on float16 inputs"

[[ $(sha256sum "$MODEL") == "$before" ]] && ok || fail "the input model changed"

# Accuracy, size and agreement with onnxruntime on the real models.
if has_ort; then
  "$PYTHON" "$SOURCE_DIR/tests/ort/quantize_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" >"$WORK/ort.log" 2>&1
  if judged $?; then
    ok
  else
    fail "quantized models against onnxruntime:"
  fi
  cat "$WORK/ort.log"
  # Dynamic mode's 1-D Convs (MatMulInteger over their windows) on generated shapes.
  "$PYTHON" "$SOURCE_DIR/tests/ort/conv_windows_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" >"$WORK/windows.log" 2>&1
  if judged $?; then
    ok
  else
    fail "1-D Convs as windows against onnxruntime:"
  fi
  cat "$WORK/windows.log"
else
  missing_data "onnxruntime-node: the accuracy checks"
fi

finish
