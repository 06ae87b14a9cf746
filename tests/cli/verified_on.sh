#!/usr/bin/env bash
# What a command verified is said, and random inputs are not mistaken for real ones:
#  - convert --to-fp16 of openWakeWord's mel-spectrogram front end (fed 16-bit-scaled PCM, its
#    power spectrum overflows float16 on speech, not on random inputs in [-1, 1)): on random
#    inputs a warning gives the float16 headroom seen and asks for --inputs; verified on one
#    spoken sample, the written model has no NaN/Inf on two other ones and agrees with float32
#    within the float16 tolerance, in onnxtool's runner and in onnxruntime;
#  - quantize --mode dynamic without data is measured on random samples and says so; a strided
#    1-D Conv STFT front end (tests/make_stft_front_end.py) stays float (its windows are made only
#    on real samples), and openWakeWord's front end is kept float or reaches cosine 0.99 on speech
#    in onnxruntime; a side output that no quantization brings to the target is named with
#    --accuracy-outputs, and the model written unchanged says so ("changed": false);
#  - --input-range shapes random inputs (run, compare, verification), run/compare --random size
#    free dims as verification does and name --input-shape when no size runs;
#  - compare --json fills "measured" for every gate, and --outputs judges only those named.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
needs_ort
MEL=$MODELS/bench/oww_melspectrogram.onnx
needs_file "$MEL"
command -v espeak-ng >/dev/null || skip_all "espeak-ng"
make_work verified_on
# json EXPR: evaluates EXPR on the JSON document in $WORK/stdout (d).
json() { "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" "$WORK/stdout"; }

# Speech (espeak-ng, 16 kHz) as the front end takes it: 1 s windows of 16-bit-scaled PCM, in
# three sample folders; the STFT front end and the small models of the other checks.
"$PYTHON" - "$WORK" "$SOURCE_DIR" <<'EOF' || { echo "FAIL: making the inputs"; exit 1; }
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
work, source = sys.argv[1:3]
sys.path.insert(0, os.path.join(source, "tests"))
import make_real_inputs
import make_stft_front_end
pcm = make_real_inputs.speech_16k(work) * 32767
for k, start in enumerate((4000, 16000, 28000)):
    d = os.path.join(work, "speech", f"s{k}")
    os.makedirs(d)
    x = np.zeros(16000, np.float32)
    piece = pcm[start:start + 16000]
    x[:len(piece)] = piece
    np.save(os.path.join(d, "input.npy"), x[None])
    os.makedirs(os.path.join(work, "speech_stft", f"s{k}"))
    np.save(os.path.join(work, "speech_stft", f"s{k}", "audio.npy"), x[None])
onnx.save(make_stft_front_end.build(), os.path.join(work, "stft.onnx"))
rng = np.random.default_rng(5)
def save(nodes, inputs, outputs, inits, name):
    g = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(work, name + ".onnx"))
f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
# mlp: y = relu(x W1) W2, quantizable without data.
save([helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
      helper.make_node("MatMul", ["r", "w2"], ["y"])], [f("x", [32, 256])], [f("y", [32, 128])],
     {"w1": rng.standard_normal((256, 256)).astype(np.float32), "w2": rng.standard_normal((256, 128)).astype(np.float32)}, "mlp")
# side: main = x Wa; side = x Wa - x Wb with Wb within 1e-4 of Wa: the difference of two products
# is all quantization noise once either is quantized, whatever is kept float.
wa = rng.standard_normal((256, 256)).astype(np.float32)
wb = (wa + 1e-4 * rng.standard_normal((256, 256))).astype(np.float32)
save([helper.make_node("MatMul", ["x", "wa"], ["main"]), helper.make_node("MatMul", ["x", "wb"], ["b"]),
      helper.make_node("Sub", ["main", "b"], ["side"])], [f("x", [32, 256])], [f("main", [32, 256]), f("side", [32, 256])],
     {"wa": wa, "wb": wb}, "side")
# pair_a/pair_b: y the same in both, z 10% off in B.
for name, k in (("pair_a", 1.0), ("pair_b", 1.1)):
    save([helper.make_node("Mul", ["x", "one"], ["y"]), helper.make_node("Mul", ["x", "k"], ["z"])], [f("x", [16])],
         [f("y", [16]), f("z", [16])], {"one": np.array([1], np.float32), "k": np.array([k], np.float32)}, name)
# window: a MaxPool of 1000 along a free dim: random inputs of 1, 64 and 512 are all too short.
save([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[1000])], [f("x", [1, 1, "t"])], [f("y", [1, 1, "u"])], {},
     "window")
# ident: y = x, uint8 in and out.
u8 = lambda n: helper.make_tensor_value_info(n, TensorProto.UINT8, [8])
save([helper.make_node("Identity", ["x"], ["y"])], [u8("x")], [u8("y")], {}, "ident")
EOF

# --- convert --to-fp16: random inputs warn; a spoken sample keeps the spectrum in float32
expect_tool "fp16 on random inputs: the headroom warning" 0 "" -- convert "$MEL" -o "$WORK/h_random.onnx" --to-fp16
grep -q "warning: float16 verified on random inputs only: .*65504.*--inputs DIR" "$WORK/stderr" && ok ||
  fail "no headroom warning on stderr: $(cat "$WORK/stderr")"
grep -q "^note: random inputs prove less than real data" "$WORK/stdout" && ok || fail "no random-inputs note: $(cat "$WORK/stdout")"
expect_tool "fp16 --json: the headroom and the note" 0 "" -- convert "$MEL" -o "$WORK/h_random2.onnx" --to-fp16 --json
json 'd["precision"]["headroom"]["largest_magnitude"] < 16384 and d["verification"]["random_inputs"] and d["verification"]["note"]' && ok ||
  fail "--json lacks precision.headroom or verification.note: $(head -c 600 "$WORK/stdout")"
expect_tool "fp16 verified on a spoken sample" 0 "kept in float32 for range" -- \
  convert "$MEL" -o "$WORK/h_speech.onnx" --to-fp16 --inputs "$WORK/speech/s0"
grep -q "warning:" "$WORK/stderr" && fail "a warning with real inputs: $(cat "$WORK/stderr")" || ok
# Judged on the two other spoken samples: float32 and both float16 models, in both runtimes.
for s in s1 s2; do
  for m in "$MEL" "$WORK/h_speech.onnx" "$WORK/h_random.onnx"; do
    "$ONNXTOOL" run "$m" --inputs "$WORK/speech/$s" --output-dir "$WORK/ours/$(basename "$m" .onnx)_$s" >/dev/null 2>&1 ||
      fail "run $(basename "$m") on $s"
  done
done
"$PYTHON" - "$WORK" "$MEL" "$ORT_RUN" "$CACHE_DIR" <<'EOF' && ok || fail "float16 on speech"
import os, sys
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(sys.argv[3])))
from ort_util import ort_batch
work, mel, ort_run, cache = sys.argv[1:5]
env = dict(os.environ, ONNXTOOL_ORT_DIR=os.path.join(cache, "ort"))
def within_fp16(a, b):  # the float16 tolerance: |a - b| <= 3e-2 max(1, max|a|) + 1e-2 |a|
    return np.all(np.abs(a - b) <= 3e-2 * max(1.0, np.abs(a).max()) + 1e-2 * np.abs(a))
bad = []
for s in ("s1", "s2"):
    ref = np.load(f"{work}/ours/oww_melspectrogram_{s}/output.npy").astype(np.float64)
    half = f"{work}/speech_{s}_float16.npy"  # the converted models take float16
    np.save(half, np.load(f"{work}/speech/{s}/input.npy").astype(np.float16))
    jobs = [{"model": m, "inputs": {"input": half}, "output_dir": f"{work}/ort/{os.path.basename(m)}_{s}"}
            for m in (f"{work}/h_speech.onnx", f"{work}/h_random.onnx")]
    lines = ort_batch(ort_run, env, work, jobs)
    for name, got in (("onnxtool", np.load(f"{work}/ours/h_speech_{s}/output.npy")),
                      ("onnxruntime", np.load(lines[0]["outputs"][0]["file"]))):
        got = got.astype(np.float64)
        if not np.all(np.isfinite(got)) or not within_fp16(ref, got):
            bad.append(f"{name}, {s}: verified on speech, max abs error {np.nanmax(np.abs(ref - got))}")
    # The model verified on random inputs is what the warning is about: it overflows here.
    if np.all(np.isfinite(np.load(f"{work}/ours/h_random_{s}/output.npy"))):
        bad.append(f"{s}: the model verified on random inputs has no NaN/Inf on speech (the case no longer shows the hazard)")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF

# --- quantize without data: measured on random samples, said so
expect_tool "dynamic without data: measured on random samples" 0 "on 4 samples, random (seed 0;" -- \
  quantize "$WORK/mlp.onnx" -o "$OUT/q.onnx" --mode dynamic
grep -q "^note: random inputs prove less than real data" "$WORK/stdout" && ok || fail "no random-samples note: $(cat "$WORK/stdout")"
expect_tool "dynamic without data --json" 0 "" -- quantize "$WORK/mlp.onnx" -o "$OUT/q.onnx" --mode dynamic --json
json 'd["changed"] and d["random_samples"].startswith("random (seed 0") and d["cosine"] >= 0.99 and d["note"]' && ok ||
  fail "--json: $(head -c 500 "$WORK/stdout")"
expect_tool "--no-verify: unmeasured, said so" 0 "accuracy not measured (--no-verify)" -- \
  quantize "$WORK/mlp.onnx" -o "$OUT/q.onnx" --mode dynamic --no-verify
expect_tool "the STFT front end stays float without real samples" 0 "only when measured on real samples" -- \
  quantize "$WORK/stft.onnx" -o "$OUT/q.onnx" --mode dynamic
grep -q "warning: .* is written unchanged: " "$WORK/stderr" && ok || fail "no 'written unchanged' warning: $(cat "$WORK/stderr")"
expect_tool "unchanged --json" 0 "" -- quantize "$WORK/stft.onnx" -o "$OUT/q.onnx" --mode dynamic --json
json 'd["changed"] is False and d["unchanged"]' && ok || fail "--json of an unchanged model: $(head -c 500 "$WORK/stdout")"
# openWakeWord's front end: float, or cosine >= 0.99 in onnxruntime on speech.
expect_tool "openWakeWord's front end, dynamic without data" 0 "" -- quantize "$MEL" -o "$WORK/mel_q.onnx" --mode dynamic --json
"$PYTHON" - "$WORK" "$MEL" "$ORT_RUN" "$CACHE_DIR" <<'EOF' && ok || fail "openWakeWord's front end quantized below 0.99 on speech"
import json, os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(sys.argv[3]))
from ort_util import ort_batch, cosine
work, mel, ort_run, cache = sys.argv[1:5]
if not json.load(open(f"{work}/stdout"))["changed"]:
    sys.exit(0)
env = dict(os.environ, ONNXTOOL_ORT_DIR=os.path.join(cache, "ort"))
jobs = [{"model": m, "inputs": {"input": f"{work}/speech/{s}/input.npy"}, "output_dir": f"{work}/ortq/{i}_{s}"}
        for i, m in enumerate((mel, f"{work}/mel_q.onnx")) for s in ("s0", "s1", "s2")]
out = [np.load(l["outputs"][0]["file"]).ravel() for l in ort_batch(ort_run, env, work, jobs)]
c = cosine(np.concatenate(out[:3]).astype(np.float64), np.concatenate(out[3:]).astype(np.float64))
print("cosine on speech", c)
sys.exit(0 if c >= 0.99 else 1)
EOF
# A side output no quantization brings to the target: named, with the flag that leaves it out.
expect_tool "a blocking side output is named" 0 "judge just those with --accuracy-outputs main" -- \
  quantize "$WORK/side.onnx" -o "$OUT/q.onnx" --mode dynamic --time-limit 120
grep -q "outputs side [0-9.]* miss it where main reach" "$WORK/stdout" && ok || fail "the side output's score is not given: $(cat "$WORK/stdout")"
expect_tool "--accuracy-outputs main quantizes it" 0 "quantized 2 nodes" -- \
  quantize "$WORK/side.onnx" -o "$OUT/q.onnx" --mode dynamic --accuracy-outputs main

# --- random inputs: ranges, free dims
expect_tool "--input-range of one value" 0 "min 7  max 7" -- run "$WORK/ident.onnx" --random --input-range x=7,7
expect_tool "--input-range outside uint8" 2 "no uint8 value" -- run "$WORK/ident.onnx" --random --input-range x=-5,-1
expect_tool "--input-range LO above HI" 2 "LO must not exceed HI" -- run "$WORK/ident.onnx" --random --input-range x=3,1
expect_tool "--input-range without --random" 2 "add --random" -- run "$WORK/ident.onnx" --input-range x=1,2
expect_tool "run --random sizes a free dim as verification does" 0 "output: float[1,1,1,32]" -- run "$MEL" --random
expect_tool "run --random: no size runs, --input-shape named" 1 "--input-shape" -- run "$WORK/window.onnx" --random
expect_tool "compare --input-range shows the float16 overflow" 1 "NaN/Inf mismatches" -- \
  compare "$MEL" "$WORK/h_random.onnx" --input-range=-32768,32767
grep -q "^inputs: random (seed 0; values uniform in \[-32768, 32767)" "$WORK/stdout" && ok || fail "compare names no inputs: $(cat "$WORK/stdout")"

# --- compare: every gate measured; --outputs
expect_tool "every gate has measured" 0 "" -- \
  compare "$WORK/pair_a.onnx" "$WORK/pair_a.onnx" --json --min-cosine 0.99 --min-sqnr 20 --max-rel-error 0.1 --max-abs-error 1
json 'all(g["measured"] is not None for o in d["outputs"] for g in o["gates"]) and len(d["outputs"][0]["gates"]) == 4' && ok ||
  fail "a gate without measured: $(head -c 800 "$WORK/stdout")"
expect_tool "pair: z differs" 1 "output z" -- compare "$WORK/pair_a.onnx" "$WORK/pair_b.onnx"
expect_tool "--outputs y judges y only" 0 "" -- compare "$WORK/pair_a.onnx" "$WORK/pair_b.onnx" --outputs y --json
json '[o["name"] for o in d["outputs"]] == ["y"]' && ok || fail "--outputs y: $(head -c 400 "$WORK/stdout")"
expect_tool "--outputs names no output" 2 "no output 'w'" -- compare "$WORK/pair_a.onnx" "$WORK/pair_b.onnx" --outputs w
# --- convert --opset: verified says so, and only that (once printed "not verified" as well)
expect_tool "convert --opset verifies" 0 "verified 2 output(s) on random" -- convert "$WORK/pair_a.onnx" -o "$WORK/up.onnx" --opset 18
grep -q "not verified" "$WORK/stdout" && fail "convert --opset says both verified and not verified: $(cat "$WORK/stdout")" || ok
expect_tool "convert --opset --no-verify says so" 0 "not verified (--no-verify)" -- \
  convert "$WORK/pair_a.onnx" -o "$WORK/up2.onnx" --opset 18 --no-verify

finish
