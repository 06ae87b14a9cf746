#!/usr/bin/env bash
# `onnxtool compare` as a CI gate: samples from a folder of sample folders (and random samples),
# per-output worst figures over them, the gates (--min-cosine, --max-rel-error, --min-sqnr,
# --max-abs-error) with the one-line failure naming output, gate, value and sample, cosine on a
# one-element output judged by relative error, golden outputs (--expect, in the NAME.npy layout
# `run --output-dir` writes and in the ONNX test_data_set layout), float16-I/O models against
# their float32 original, the metric names of optimize's verification, and bad inputs (exit 2,
# one line, nothing written).
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_SOURCE_DIR, ONNXTOOL_BACKEND_DATA.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
make_work compare_gates
M=$SOURCE_DIR/testdata/tiny_cnn.onnx
# json EXPR: evaluates EXPR on the JSON document of the last command's stdout (d).
json() { "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" "$WORK/stdout"; }

# scale.onnx: y[1] = x * 1 (A) and x * 1.07 (B, 7% off); z[8] = x * [1..8] in both.
# Samples: three folders of x.npy; s1 gives B's largest absolute error (x = 3).
"$PYTHON" - "$WORK" <<'EOF'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
w = sys.argv[1]
def model(path, k):
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "k"], ["y"]), helper.make_node("Mul", ["x", "r"], ["z"])], "scale",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1]), helper.make_tensor_value_info("z", TensorProto.FLOAT, [8])],
        [numpy_helper.from_array(np.array([k], np.float32), "k"),
         numpy_helper.from_array(np.arange(1, 9, dtype=np.float32), "r")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
model(os.path.join(w, "a.onnx"), 1.0)
model(os.path.join(w, "b.onnx"), 1.07)
for name, x in (("s0", 1.0), ("s1", 3.0), ("s2", -0.5)):
    os.makedirs(os.path.join(w, "samples", name))
    np.save(os.path.join(w, "samples", name, "x.npy"), np.array([x], np.float32))
# offset.onnx: y[8] = x (A) and x + 0.01 (B). Sample "loud" has x of 10..17 (62 dB alone),
# "quiet" x of about 1e-3 (the offset is most of the signal there: cosine 0.53, SQNR -19 dB);
# together 59.7 dB.
def offset(path, c):
    g = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"])], "offset",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])],
                          [numpy_helper.from_array(np.array([c], np.float32), "c")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
offset(os.path.join(w, "offset_a.onnx"), 0.0)
offset(os.path.join(w, "offset_b.onnx"), 0.01)
for name, x in (("loud", np.arange(10, 18, dtype=np.float32)), ("quiet", np.linspace(-1e-3, 2e-3, 8).astype(np.float32))):
    os.makedirs(os.path.join(w, "offset_samples", name))
    np.save(os.path.join(w, "offset_samples", name, "x.npy"), x)
os.makedirs(os.path.join(w, "bad", "s0"))
np.save(os.path.join(w, "bad", "s0", "wrong_name.npy"), np.array([1], np.float32))
EOF
A=$WORK/a.onnx B=$WORK/b.onnx S=$WORK/samples

# 1. A folder of sample folders: every sample runs; the worst figures and their samples.
expect_tool "sample folders, no gate, default tolerance" 1 "beyond tolerance" -- compare "$A" "$B" --inputs "$S"
grep -q "^3 samples" "$WORK/stdout" && ok || fail "3 samples not reported: $(cat "$WORK/stdout")"
expect_tool "sample folders --json" 1 "" -- compare "$A" "$B" --inputs "$S" --json
json 'd["samples"] == 3 and d["sample_names"] == ["s0", "s1", "s2"] and d["schema_version"] == 2' && ok || fail "samples in --json"
json 'abs(d["outputs"][0]["max_abs_error"] - 0.21) < 1e-5 and d["outputs"][0]["worst_samples"]["max_abs_error"] == 1 and d["outputs"][0]["cosine"] is None' &&
  ok || fail "y: worst max abs error 0.21 on s1, cosine null: $(head -c 600 "$WORK/stdout")"
json 'abs(d["outputs"][1]["max_rel_error"]) < 1e-6 and d["outputs"][1]["cosine"] == 1 and d["outputs"][1]["sqnr_db"] == "inf"' &&
  ok || fail "z equal: cosine 1, sqnr inf"
expect_tool "one sample folder still works" 1 "beyond tolerance" -- compare "$A" "$B" --inputs "$S/s1"
expect_tool "random samples" 0 "within tolerance" -- compare "$A" "$A" --random --samples 4

# Cosine and SQNR over all samples together (as quantize's --accuracy-target), the lowest
# single sample's beside them: the quiet sample weighs as little as its signal.
OA=$WORK/offset_a.onnx OB=$WORK/offset_b.onnx OS=$WORK/offset_samples
expect_tool "pooled cosine and SQNR pass" 0 "gates passed" -- compare "$OA" "$OB" --inputs "$OS" --min-cosine 0.999 --min-sqnr 50
grep -q "cosine [01][.0-9]* (lowest 0.5[.0-9]* on quiet), SQNR 5[5-9][.0-9]* dB (lowest -19[.0-9]* on quiet)" "$WORK/stdout" && ok ||
  fail "pooled figures with the lowest sample's: $(cat "$WORK/stdout")"
expect_tool "pooled figures --json" 0 "" -- compare "$OA" "$OB" --inputs "$OS" --min-sqnr 50 --json
json '(o := d["outputs"][0])["cosine"] > 0.9999 and 55 < o["sqnr_db"] < 60 and 0.5 < o["lowest_sample"]["cosine"] < 0.6 and o["lowest_sample"]["sqnr_db"] < 0 and o["worst_samples"]["cosine"] == 1 and o["worst_samples"]["sqnr_db"] == 1 and o["gates"][0]["sample"] is None' &&
  ok || fail "pooled figures in --json: $(head -c 1200 "$WORK/stdout")"
expect_tool "one quiet sample alone fails" 1 "--min-cosine 0.999: cosine 0.53" -- compare "$OA" "$OB" --inputs "$OS/quiet" --min-cosine 0.999

# 2. Gates: pass/fail per output with the measured value; exit 1 naming output, gate, value, sample.
expect_tool "gates pass" 0 "gates passed" -- compare "$A" "$B" --inputs "$S" --max-rel-error 0.08 --min-sqnr 20
grep -q "tolerance not applied" "$WORK/stdout" && ok || fail "atol/rtol applied although only gates were given"
expect_tool "gates with an explicit atol" 1 "beyond tolerance" -- compare "$A" "$B" --inputs "$S" --max-rel-error 0.08 --atol 1e-5
expect_tool "max rel error gate fails" 1 "output y: --max-rel-error 0.05: max_rel_error 0.07" -- compare "$A" "$B" --inputs "$S" --max-rel-error 0.05
grep -q "on sample s" "$WORK/stderr" && ok || fail "the failure names no sample: $(cat "$WORK/stderr")"
expect_tool "max abs error gate names the sample" 1 "--max-abs-error 0.1: max_abs_error 0.21" -- compare "$A" "$B" --inputs "$S" --max-abs-error 0.1
grep -q "on sample s1" "$WORK/stderr" && ok || fail "the max abs failure is not on s1: $(cat "$WORK/stderr")"
expect_tool "sqnr gate fails" 1 "--min-sqnr 30: sqnr_db 23" -- compare "$A" "$B" --inputs "$S" --min-sqnr 30
expect_tool "several gates, several failures" 1 "more failures" -- compare "$A" "$B" --inputs "$S" --min-sqnr 30 --max-abs-error 0 --max-rel-error 0.01
expect_tool "gates --json" 1 "" -- compare "$A" "$B" --inputs "$S" --max-rel-error 0.05 --min-sqnr 20 --json
json 'not d["ok"] and d["gates_passed"] is False and not d["tolerance_applied"] and [(g["gate"], g["pass"]) for g in d["outputs"][0]["gates"]] == [("--max-rel-error", False), ("--min-sqnr", True)]' &&
  ok || fail "gates in --json: $(head -c 800 "$WORK/stdout")"
# Cosine on a one-element output: judged by relative error (7%: as a cosine 1/sqrt(1+0.07^2) = 0.99756).
expect_tool "min cosine on one element passes by rel error" 0 "judged by max_rel_error as cosine 0.9975" -- compare "$A" "$B" --inputs "$S" --min-cosine 0.99
expect_tool "min cosine on one element fails by rel error" 1 "output y: --min-cosine 0.999: cosine not meaningful" -- compare "$A" "$B" --inputs "$S" --min-cosine 0.999
expect_tool "min cosine --json" 1 "" -- compare "$A" "$B" --inputs "$S" --min-cosine 0.999 --json
json 'd["outputs"][0]["gates"][0]["metric"] == "max_rel_error" and d["outputs"][1]["gates"][0]["metric"] == "cosine" and d["outputs"][1]["gates"][0]["pass"]' &&
  ok || fail "--min-cosine metrics in --json"
for bad in "--min-cosine -1" "--max-rel-error -0.1" "--min-sqnr -3" "--max-abs-error -1" "--min-cosine 1.5"; do
  # shellcheck disable=SC2086
  expect_tool "gate $bad" 2 "${bad%% *}" -- compare "$A" "$B" --inputs "$S" $bad
done

# 3. Golden outputs: run --output-dir writes them, compare --expect reads them.
for s in s0 s1 s2; do "$ONNXTOOL" run "$A" --inputs "$S/$s" --output-dir "$WORK/expected/$s" >/dev/null || fail "run $s"; done
expect_tool "expect, sample folders" 0 "within tolerance" -- compare "$A" --inputs "$S" --expect "$WORK/expected"
expect_tool "expect, one sample" 0 "within tolerance" -- compare "$A" --inputs "$S/s1" --expect "$WORK/expected/s1"
expect_tool "expect with a gate" 1 "output y: --max-rel-error 0.01" -- compare "$B" --inputs "$S" --expect "$WORK/expected" --max-rel-error 0.01
expect_tool "expect --json" 0 "" -- compare "$A" --inputs "$S" --expect "$WORK/expected" --json
json 'd["b"] is None and d["expect"].endswith("expected") and d["ok"]' && ok || fail "expect in --json"
rm "$WORK/expected/s2/z.npy"
expect_tool "expect folder missing an output" 2 "s2: no z.npy or z.pb (output 'z')" -- compare "$A" --inputs "$S" --expect "$WORK/expected"
expect_tool "expect with two models" 2 "--expect" -- compare "$A" "$B" --inputs "$S" --expect "$WORK/expected"
expect_tool "expect with random samples" 2 "--expect" -- compare "$A" --random --samples 2 --expect "$WORK/expected/s0"
RELU=$BACKEND/node/test_relu
if [[ -d $RELU ]]; then
  expect_tool "expect, test_data_set layout" 0 "within tolerance" -- compare "$RELU/model.onnx" --inputs "$RELU" --expect "$RELU"
else
  missing_data "$RELU"
fi

# 4. Float16 inputs and outputs against the float32 original: inputs cast, outputs compared.
"$ONNXTOOL" convert "$M" -o "$WORK/m16.onnx" --to-fp16 >/dev/null 2>&1 || fail "convert --to-fp16"
expect_tool "fp16-I/O model against float32" 0 "inputs cast to float16 for B (image)" -- compare "$M" "$WORK/m16.onnx" --min-cosine 0.999
expect_tool "float32 against fp16-I/O model" 0 "inputs cast to float for B (image)" -- compare "$WORK/m16.onnx" "$M" --min-cosine 0.999

# 5. One metric name: optimize's verification reports the same keys as compare.
expect_tool "optimize --json metrics" 0 "" -- optimize "$M" -o "$OUT/o.onnx" --json
json 'all("max_abs_error" in o and "max_rel_error" in o and "sqnr_db" in o and "max_abs" not in o for o in d["verification"]["outputs"] if not o["exact"])' &&
  ok || fail "optimize verification keys: $(head -c 600 "$WORK/stdout")"

# Bad inputs: one line naming the culprit, exit 2.
expect_tool "sample folder missing an input" 2 "has no x.npy or x.pb" -- compare "$A" "$B" --inputs "$WORK/bad"
grep -q "sample $WORK/bad/s0" "$WORK/stderr" && ok || fail "the missing input's line names no sample folder: $(cat "$WORK/stderr")"
expect_tool "--samples with sample folders" 2 "--samples" -- compare "$A" "$B" --inputs "$S" --samples 2
finish
