#!/usr/bin/python3
"""`onnxtool convert --to-fp16` verified on a real input, on every float32 model of the benchmark set.

    bench/fp16_models.py [ONNXTOOL [CACHE_DIR]]   (defaults: build/onnxtool, .cache)

Needs the models (testdata/fetch_models.sh, and --manifest bench/models.sha256), their samples
(bench/make_quant_bench_data.py) and onnxruntime-node in CACHE_DIR/ort (testdata/fetch_models.sh).

For each model, and for plain float16 and --keep-io-types: converts with the model's first
calibration sample as the verification input (`--inputs calib/<first>`, what a user checking on
real data does, where random inputs often leave a model's outputs near zero), then judges the
written model in onnxruntime against the float32 model over the evaluation samples, which the
conversion never saw: cosine similarity over all samples' outputs together, and the largest
absolute error. Prints one markdown row per conversion: what stayed float32 and why (values
kept by the localized rounds, or a head of the graph found by bisection), the file size against
float32, the command's wall time, and onnxruntime's figures. A refused conversion shows its
reason. Exits 1 when a written model scores below cosine 0.99 in onnxruntime (a silent wrong
result), else 0.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "ort"))
from ort_util import concatenated_outputs, cosine, half_inputs, ort_batch, sample_folders  # noqa: E402

MODELS = ["ch_PP-OCRv4_det_infer", "ch_PP-OCRv4_rec_infer", "ch_ppocr_mobile_v2.0_cls_infer", "silero_vad_legacy",
          "silero_vad_v5", "silero_vad_v6", "oww_melspectrogram", "oww_embedding", "oww_hey_jarvis", "en_PP-OCRv3_det",
          "ch_PP-OCRv3_rec", "en_PP-OCRv4_rec", "ddddocr_det", "ddddocr_rec", "retinaface_mnet025",
          "moonshine_encoder_float"]
FLOOR = 0.99


def model_path(cache, name):
    for sub in ("", "bench"):
        p = os.path.join(cache, "models", sub, name + ".onnx")
        if os.path.exists(p):
            return p
    return None


def main():
    onnxtool = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "onnxtool"))
    cache = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.environ.get("ONNXTOOL_CACHE_DIR", os.path.join(ROOT, ".cache")))
    data = os.path.join(cache, "quant_bench_data")
    ort_run = os.path.join(ROOT, "tests", "ort", "ort_run.js")
    env = dict(os.environ, ONNXTOOL_ORT_DIR=os.path.join(cache, "ort"))
    if not os.path.isdir(os.path.join(cache, "ort", "node_modules", "onnxruntime-node")):
        sys.exit("fp16_models.py: onnxruntime-node is not in " + os.path.join(cache, "ort") + " (testdata/fetch_models.sh)")
    if not os.path.isdir(data):
        sys.exit("fp16_models.py: no samples in " + data + " (bench/make_quant_bench_data.py)")
    work = tempfile.mkdtemp(prefix="onnxtool_fp16_models.")
    print("| model | I/O | verified on | result | kept float32 | file | convert s | onnxruntime cosine on eval | max abs error |")
    print("| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: |")
    silent_wrong = 0
    fixed = []
    start = time.time()
    for name in MODELS:
        src = model_path(cache, name)
        folder = os.path.join(data, name)
        if not src or not os.path.isdir(folder):
            print(f"| {name} | | | not fetched | | | | | |")
            continue
        first = sorted(os.listdir(os.path.join(folder, "calib")))[0]
        evals = sample_folders(os.path.join(folder, "eval"))
        d = os.path.join(work, name)
        os.makedirs(d)
        # A model whose stored shape declarations contradict its own graph (ddddocr_rec) fails
        # check, and onnxtool writes nothing from it: converted from a copy with them fixed.
        if subprocess.run([onnxtool, "check", src], capture_output=True).returncode != 0:
            copy = os.path.join(d, name + ".fixed.onnx")
            if subprocess.run([onnxtool, "edit", src, "-o", copy, "--fix-declarations"],
                              capture_output=True).returncode == 0:
                src = copy
                fixed.append(name)
        try:
            ref = concatenated_outputs(ort_batch(ort_run, env, d, [{"model": src, "inputs": f, "output_dir": os.path.join(d, "o32", s)}
                                                       for s, f in evals]))
        except RuntimeError as e:
            print(f"| {name} | | | float32 model: {e} | | | | | |")
            continue
        for io, flags in (("float16", []), ("float32", ["--keep-io-types"])):
            out = os.path.join(d, f"fp16_{io}.onnx")
            t0 = time.time()
            r = subprocess.run([onnxtool, "convert", src, "-o", out, "--to-fp16", "--inputs",
                                os.path.join(folder, "calib", first), "--json"] + flags,
                               capture_output=True, text=True)
            seconds = time.time() - t0
            row = f"| {name} | {io} | {first} |"
            try:
                j = json.loads(r.stdout)
            except ValueError:
                j = {}
            if r.returncode != 0:
                reason = (j.get("error") or (r.stderr.strip().splitlines() or ["?"])[-1]).replace("|", "/")
                print(f"{row} refused: {reason[:220]} | | | {seconds:.1f} | | |")
                continue
            p = j["precision"]
            if p.get("accuracy_head_nodes"):
                kept = f"head of {p['accuracy_head_nodes']} nodes ({p['blocked_nodes']} blocked)"
            elif p["accuracy_values"] or p["range_values"]:
                kept = f"{len(p['accuracy_values'])} values for accuracy, {len(p['range_values'])} for range ({p['blocked_nodes']} blocked)"
            else:
                kept = f"{p['blocked_nodes']} blocked by op type"
            ratio = os.path.getsize(out) / os.path.getsize(src)
            try:
                got = concatenated_outputs(ort_batch(ort_run, env, d, [{"model": out, "inputs": f, "output_dir": os.path.join(d, "o16" + io, s)}
                                                          for s, f in half_inputs(evals, out, d)]))
            except RuntimeError as e:
                print(f"{row} written | {kept} | {ratio:.2f}x | {seconds:.1f} | onnxruntime: {str(e)[:120]} | |")
                continue
            cosines = [cosine(ref[k], got[k]) for k in ref if k in got and ref[k].size > 1]
            worst = min(cosines) if cosines else 1.0
            err = max(float(np.max(np.abs(ref[k] - got[k]))) for k in ref if k in got)
            silent_wrong += worst < FLOOR
            print(f"{row} written | {kept} | {ratio:.2f}x | {seconds:.1f} | {worst:.5f} | {err:.3g} |")
    if fixed:
        print(f"\n({', '.join(fixed)}: stored shape declarations that contradict the graph, fixed first with edit --fix-declarations)")
    print(f"\n{silent_wrong} written model(s) below cosine {FLOOR} in onnxruntime; {time.time() - start:.0f} s")
    sys.exit(1 if silent_wrong else 0)


if __name__ == "__main__":
    main()
