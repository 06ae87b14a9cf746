#!/usr/bin/python3
"""The kept runtime-departure cases (testdata/runtime_departures/, docs/runtime_departures.md),
run in onnxtool and in onnxruntime-node, both printed beside numpy's answer.

For every case:
 - onnxtool's `run` must give exactly what numpy computes from the spec (else FAIL: onnxtool is
   wrong);
 - onnxruntime must still depart from it at every optimization level (else FAIL: the departure
   is gone in this onnxruntime, so its row in convert/runtime_departures.cpp, the workaround
   `convert --to-fp16` applies, and its docs entry can go: the list must stay true);
 - the documented workaround model, when the case has one, must give numpy's answer in
   onnxruntime at every level (else FAIL: the docs' workaround no longer holds).
The folder must also be what testdata/runtime_departures/make_cases.py writes.

Usage: runtime_departures_vs_ort.py ONNXTOOL SOURCE_DIR CACHE_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np

from ort_util import finish, judge_setup, ort_batch, work_dir

onnxtool, source_dir, cache_dir, ort_run, env = judge_setup(sys.argv)
cases_dir = os.path.join(source_dir, "testdata", "runtime_departures")
LEVELS = ["disabled", "basic", "extended", "all"]
with open(os.path.join(cache_dir, "ort", "node_modules", "onnxruntime-node", "package.json")) as f:
    ORT = "onnxruntime " + json.load(f)["version"]


def sigmoid_half(logits):
    """The float16 rounding of the float32 sigmoid (make_cases.py keeps the logits away from
    float16 rounding ties, so any Sigmoid within 64 float32 ulps rounds the same)."""
    return (1.0 / (1.0 + np.exp(-logits.astype(np.float64)))).astype(np.float32).astype(np.float16)


def max_pool_3x3(x):
    n, c, h, w = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    return np.max([padded[:, :, i:i + h, j:j + w] for i in range(3) for j in range(3)], axis=0)


def peak_picking(feeds):
    heat = sigmoid_half(feeds["logits"])
    return {"scores": ((heat == max_pool_3x3(heat)) * heat).astype(np.float32).reshape(1, -1)}


def cast_rounding(feeds):
    return {"same": feeds["x"].astype(np.float16) == feeds["y"]}


def describe(name, got, want):
    """'scores: 0 of 465 peaks' or 'same: 1 of 16 true', and whether got is want exactly."""
    if got.dtype == np.bool_:
        return f"{name}: {int(got.sum())} of {got.size} true", np.array_equal(got, want)
    right = int(((got != 0) & (got == want)).sum())
    return f"{name}: {right} of {int((want != 0).sum())} peaks ({int((got != 0).sum())} nonzero)", np.array_equal(got, want)


# (folder, numpy's answer from the inputs, the pattern row it stands for)
CASES = [("ort_fp16_peak_picking", peak_picking, "peak_picking"),
         ("ort_fp16_cast_rounding", cast_rounding, "peak_picking (its cause)")]

failures = 0
work = work_dir("onnxtool_runtime_departures.")
r = subprocess.run(["/usr/bin/python3", os.path.join(cases_dir, "make_cases.py"), "--check", cases_dir], capture_output=True, text=True)
if r.returncode != 0:
    print("FAIL " + (r.stderr.strip() or "make_cases.py --check failed"))
    failures += 1
for case, answer, row in CASES:
    folder = os.path.join(cases_dir, case)
    inputs = {f[:-4]: os.path.join(folder, "inputs", f) for f in sorted(os.listdir(os.path.join(folder, "inputs")))}
    want = answer({k: np.load(v) for k, v in inputs.items()})
    lines = []
    out = os.path.join(work, case, "onnxtool")
    r = subprocess.run([onnxtool, "run", os.path.join(folder, "model.onnx"), "--inputs", os.path.join(folder, "inputs"),
                        "--output-dir", out], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {case}: onnxtool run failed: {r.stderr.strip()}")
        failures += 1
        continue
    for name, w in want.items():
        text, same = describe(name, np.load(os.path.join(out, name + ".npy")), w)
        lines.append(f"onnxtool {text}")
        if not same:
            print(f"FAIL {case}: onnxtool departs from numpy's answer ({text}, numpy: {describe(name, w, w)[0]})")
            failures += 1
    models = [("model.onnx", True)] + ([("workaround.onnx", False)] if os.path.exists(os.path.join(folder, "workaround.onnx")) else [])
    jobs = [{"model": os.path.join(folder, m), "inputs": inputs, "output_dir": os.path.join(work, case, m, level), "level": level}
            for m, _ in models for level in LEVELS]
    try:
        results = ort_batch(ort_run, env, os.path.join(work), jobs)
    except RuntimeError as e:
        print(f"FAIL {case}: {e}")
        failures += 1
        continue
    for job, result in zip(jobs, results):
        model, level = os.path.basename(os.path.dirname(job["output_dir"])), os.path.basename(job["output_dir"])
        departs = next(d for m, d in models if m == model)
        for o in result["outputs"]:
            text, same = describe(o["name"], np.load(o["file"]), want[o["name"]]) if o["name"] in want else (None, True)
            if text is None:
                continue
            lines.append(f"{ORT} {model} {level}: {text}")
            if departs and same:
                print(f"FAIL {case}: {ORT} no longer departs at level {level} ({text}): the workaround list can shrink "
                      f"(the row '{row}' of convert/runtime_departures.cpp and its entry in docs/runtime_departures.md)")
                failures += 1
            if not departs and not same:
                print(f"FAIL {case}: the documented workaround ({model}) is wrong in {ORT} at level {level} ({text})")
                failures += 1
    print(f"{case}: numpy " + "; ".join(describe(k, v, v)[0] for k, v in want.items()))
    for line in lines:
        print("  " + line)
print(f"runtime departures: {len(CASES)} cases, {failures} failures")
finish(failures)
