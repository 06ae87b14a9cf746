#!/usr/bin/python3
"""onnxtool run against onnxruntime-node on the real models with real inputs.

For every model and input sample written by make_real_inputs.py: run both, compare every output
with rtol 1e-3 and an absolute tolerance of max(1e-5 x the output's largest magnitude, 1e-6):
values near 0 relative to the output's scale, such as the background probabilities of a
detection map (1e-8 on a page without text), differ by float rounding that a relative test
alone would call a mismatch; 1e-6 is far below any decision threshold. One line per
model/sample; exits 1 on any mismatch.

Usage: crosscheck.py ONNXTOOL SOURCE_DIR CACHE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

RTOL = 1e-3
ATOL_SCALE = 1e-5
ATOL_FLOOR = 1e-6

onnxtool, source_dir, cache_dir = sys.argv[1:4]
env = dict(os.environ, ONNXTOOL_ORT_DIR=os.path.join(cache_dir, "ort"))
ort_run = os.path.join(source_dir, "tests", "ort", "ort_run.js")
if not os.path.isdir(os.path.join(cache_dir, "ort", "node_modules", "onnxruntime-node")):
    print("SKIP: onnxruntime-node is not installed (testdata/fetch_models.sh)")
    sys.exit(0)
inputs_dir = os.path.join(cache_dir, "inputs")
subprocess.run(["/usr/bin/python3", os.path.join(source_dir, "tests", "ort", "make_real_inputs.py"), inputs_dir], check=True,
               capture_output=True)
work = tempfile.mkdtemp(prefix="onnxtool_crosscheck.")
failures = 0
checked = 0
for model in sorted(os.listdir(inputs_dir)):
    path = os.path.join(cache_dir, "models", model + ".onnx")
    if not os.path.exists(path):
        print(f"skip {model}: not fetched")
        continue
    for sample in sorted(os.listdir(os.path.join(inputs_dir, model))):
        sdir = os.path.join(inputs_dir, model, sample)
        args = []
        for f in sorted(os.listdir(sdir)):
            args += ["--input", f"{f[:-4]}={os.path.join(sdir, f)}"]
        a = os.path.join(work, model, sample, "onnxtool")
        b = os.path.join(work, model, sample, "ort")
        os.makedirs(a)
        os.makedirs(b)
        label = f"{model}/{sample}"
        r1 = subprocess.run([onnxtool, "run", path, *args, "--output-dir", a], capture_output=True, text=True)
        r2 = subprocess.run(["node", ort_run, path, *args, "--output-dir", b, "--json"], capture_output=True, text=True, env=env)
        if r1.returncode or r2.returncode:
            print(f"FAIL {label}: {(r1.stderr or r2.stderr).strip()}")
            failures += 1
            continue
        worst = []
        bad = None
        for o in json.loads(r2.stdout)["outputs"]:
            ref = np.load(o["file"]).astype(np.float64)
            mine_path = os.path.join(a, os.path.basename(o["file"]))
            if not os.path.exists(mine_path):
                bad = f"onnxtool wrote no {os.path.basename(mine_path)}"
                break
            got = np.load(mine_path).astype(np.float64)
            if got.shape != ref.shape:
                bad = f"output {o['name']} shape {got.shape} vs {ref.shape}"
                break
            err = np.abs(got - ref)
            atol = max(ATOL_SCALE * (float(np.max(np.abs(ref))) if ref.size else 0.0), ATOL_FLOOR)
            over = err > atol + RTOL * np.abs(ref)
            rel = float(np.max(err / np.maximum(np.abs(ref), atol))) if ref.size else 0.0
            worst.append(f"{o['name']} {list(ref.shape)} max abs {float(np.max(err)) if ref.size else 0:.2e}, max rel {rel:.2e}")
            if over.any():
                bad = f"output {o['name']}: {int(over.sum())} of {over.size} elements beyond rtol {RTOL}"
        checked += 1
        print(("FAIL " if bad else "ok   ") + label + ": " + "; ".join(worst) + (f" -- {bad}" if bad else ""))
        failures += bool(bad)
print(f"{checked - failures} of {checked} model/input pairs match onnxruntime (rtol {RTOL})")
sys.exit(1 if failures else 0)
