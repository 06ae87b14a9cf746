#!/usr/bin/python3
"""The operators added or changed in opsets 18-28 against onnxruntime-node, on one-node models.

make_opset_cases writes the models and their inputs; onnxtool run and onnxruntime run each one;
outputs must agree within rtol 1e-3 / atol 1e-5 (exactly for integer and bool outputs). Cases
onnxruntime 1.30 cannot load or run (an opset or op it does not implement) are listed as skipped
with onnxruntime's message. Exits 1 on any mismatch or onnxtool failure.

Usage: new_opsets_vs_ort.py ONNXTOOL MAKE_OPSET_CASES SOURCE_DIR CACHE_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
from ort_util import finish, skip_all, work_dir

onnxtool, make_cases, source_dir, cache_dir = sys.argv[1:5]
env = dict(os.environ, ONNXTOOL_ORT_DIR=os.path.join(cache_dir, "ort"))
ort_run = os.path.join(source_dir, "tests", "ort", "ort_run.js")
if not os.path.isdir(os.path.join(cache_dir, "ort", "node_modules", "onnxruntime-node")):
    skip_all("onnxruntime-node is not installed")
work = work_dir("onnxtool_opsets.")
subprocess.run([make_cases, work], check=True)
cases = open(os.path.join(work, "cases.txt")).read().split()
passed, failed, skipped = [], [], []
for case in cases:
    d = os.path.join(work, case)
    model = os.path.join(d, "model.onnx")
    args = []
    for f in sorted(os.listdir(os.path.join(d, "inputs"))):
        args += ["--input", f"{f[:-4]}={os.path.join(d, 'inputs', f)}"]
    a, b = os.path.join(d, "onnxtool"), os.path.join(d, "ort")
    os.makedirs(a)
    os.makedirs(b)
    r2 = subprocess.run(["node", ort_run, model, *args, "--output-dir", b, "--json", "--level", "disabled"], capture_output=True,
                        text=True, env=env)
    if r2.returncode:
        skipped.append(case)
        print(f"skip {case}: onnxruntime: {r2.stderr.strip()[:160]}")
        continue
    r1 = subprocess.run([onnxtool, "run", model, *args, "--output-dir", a], capture_output=True, text=True)
    if r1.returncode:
        failed.append(case)
        print(f"FAIL {case}: onnxtool: {r1.stderr.strip()}")
        continue
    problem = None
    worst = 0.0
    for o in json.loads(r2.stdout)["outputs"]:
        ref = np.load(o["file"])
        mine = np.load(os.path.join(a, os.path.basename(o["file"])))
        if mine.shape != ref.shape or mine.dtype != ref.dtype:
            problem = f"{o['name']}: {mine.dtype}{list(mine.shape)} vs onnxruntime {ref.dtype}{list(ref.shape)}"
            break
        if ref.dtype.kind == "f":
            x, y = ref.astype(np.float64), mine.astype(np.float64)
            both_nan = np.isnan(x) & np.isnan(y)
            err = np.where(both_nan, 0, np.abs(x - y))
            tol = 1e-5 + 1e-3 * np.abs(x)
            ratio = float(np.max(err / tol)) if err.size else 0.0
            worst = max(worst, ratio)
            if ratio > 1:
                problem = f"{o['name']}: max abs error {float(np.max(err)):.3g}"
        elif not np.array_equal(ref, mine):
            problem = f"{o['name']}: values differ"
    if problem:
        failed.append(case)
        print(f"FAIL {case}: {problem}")
    else:
        passed.append(case)
        print(f"ok   {case} (worst error/tolerance {worst:.3g})")
print(f"{len(passed)} of {len(cases)} opset 18-28 cases match onnxruntime, {len(failed)} differ, "
      f"{len(skipped)} skipped (onnxruntime cannot run them)")
finish(failed)
