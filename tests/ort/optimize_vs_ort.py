#!/usr/bin/python3
"""onnxtool optimize against onnxruntime's basic level, judged by onnxruntime itself.

For every model of the backend suite's pytorch-converted folder and the real models: optimize
with onnxtool, let onnxruntime-node save its own basic-level optimization, and check that
 - onnxtool's node count (all graphs) is at or below onnxruntime's;
 - onnxruntime gives the same outputs on the optimized model as on the original (rtol 1e-4,
   atol 1e-5) on the suite's inputs (real models: fixed-seed random inputs).
What onnxruntime's latency gains is measured by bench/optimize_speed.sh, not here: a timed
assertion among parallel ctest entries fails on noise (rec measured 26.9 -> 31.5 ms there, and
48.4 -> 42.3 ms with the two models' runs alternating in one process).
Models onnxruntime 1.30 cannot load (opset-6 ops it dropped) are listed as skipped.
Prints one line per model and a summary; exits 1 on any failure, else 77 when a model or the
suite is missing (testdata/fetch_models.sh installs them).

Usage: optimize_vs_ort.py ONNXTOOL SOURCE_DIR CACHE_DIR [BACKEND_DATA]
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from ort_util import finish, judge_setup, missing_data, verify_args, work_dir

RTOL, ATOL = 1e-4, 1e-5

onnxtool, source_dir, cache_dir, ort_run, env = judge_setup(sys.argv)
backend = sys.argv[4] if len(sys.argv) > 4 else "/usr/share/libonnx-testdata/data"

work = work_dir("onnxtool_opt_ort.")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1] if (r.stderr or r.stdout).strip() else "failed")
    return r.stdout


def node_count(model):
    return json.loads(run([onnxtool, "inspect", "--json", model]))["node_count_total"]


def ort_outputs(model, inputs, outdir):
    """onnxruntime's outputs, its own graph optimizations off (what the model itself computes)."""
    os.makedirs(outdir, exist_ok=True)
    cmd = ["node", ort_run, model, "--output-dir", outdir, "--threads", "1", "--json", "--level", "disabled"]
    for name, path in inputs.items():
        cmd += ["--input", f"{name}={path}"]
    doc = json.loads(run(cmd))
    return {o["name"]: np.load(o["file"]) for o in doc["outputs"]}


def safe(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def suite_inputs(case_dir, model_path, into):
    m = onnx.load(model_path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    inputs = {}
    for k, name in enumerate(names):
        pb = os.path.join(case_dir, "test_data_set_0", f"input_{k}.pb")
        t = onnx.TensorProto()
        with open(pb, "rb") as f:
            t.ParseFromString(f.read())
        path = os.path.join(into, safe(name) + ".npy")
        np.save(path, numpy_helper.to_array(t))
        inputs[name] = path
    return inputs


def random_inputs(spec, into):
    rng = np.random.default_rng(7)
    inputs = {}
    for name, (dtype, shape) in spec.items():
        if dtype == "int64":
            a = np.array(16000, dtype=np.int64)
        else:
            a = rng.uniform(-1, 1, size=shape).astype(np.float32)
        path = os.path.join(into, safe(name) + ".npy")
        np.save(path, a)
        inputs[name] = path
    return inputs


REAL = {
    "ch_PP-OCRv4_det_infer": {"x": ("float32", [1, 3, 160, 160])},
    "ch_PP-OCRv4_rec_infer": {"x": ("float32", [1, 3, 48, 320])},
    "ch_ppocr_mobile_v2.0_cls_infer": {"x": ("float32", [1, 3, 48, 192])},
    "silero_vad_legacy": {"input": ("float32", [1, 512]), "sr": ("int64", []), "h": ("float32", [2, 1, 64]), "c": ("float32", [2, 1, 64])},
    "silero_vad_v5": {"input": ("float32", [1, 512]), "state": ("float32", [2, 1, 128]), "sr": ("int64", [])},
    "silero_vad_v6": {"input": ("float32", [1, 512]), "state": ("float32", [2, 1, 128]), "sr": ("int64", [])},
}

cases = []
pc = os.path.join(backend, "pytorch-converted")
if os.path.isdir(pc):
    # Under the sanitizers (ONNXTOOL_SANITIZED, tests/cli/lib.sh) one case in three: every
    # optimize there is several times slower, and the passes the cases reach are the same.
    step = 3 if os.environ.get("ONNXTOOL_SANITIZED") == "1" else 1
    for c in sorted(os.listdir(pc))[::step]:
        cases.append(("pytorch-converted/" + c, os.path.join(pc, c, "model.onnx"), os.path.join(pc, c)))
else:
    missing_data(f"the ONNX backend suite's {pc}")
for name in REAL:
    path = os.path.join(cache_dir, "models", name + ".onnx")
    if os.path.exists(path):
        cases.append((name, path, None))
    else:
        missing_data(path)

failures = []
skipped = []
totals = {"ours": 0, "ort": 0, "orig": 0}
for label, model, case_dir in cases:
    d = os.path.join(work, safe(label))
    os.makedirs(d, exist_ok=True)
    try:
        ortb = os.path.join(d, "ort_basic.onnx")
        try:
            run(["node", ort_run, model, "--optimized-model", ortb, "--level", "basic"])
        except RuntimeError as e:
            # onnxruntime 1.30 dropped some opset-1..6 kernels that the spec still defines.
            print(f"skip {label}: onnxruntime cannot load the original ({e})")
            skipped.append(label)
            continue
        ours = os.path.join(d, "ours.onnx")
        try:
            # The built-in verification runs too: on the case's own inputs, or inputs the model takes.
            run([onnxtool, "optimize", model, "-o", ours] + verify_args(model, work))
        except RuntimeError as e:
            if "invalid model" not in str(e):
                raise
            # A suite model the checker rejects (listed in tests/checker_conformance_test.cpp).
            run([onnxtool, "optimize", model, "-o", ours, "--force"] + verify_args(model, work))
        n_orig, n_ours, n_ort = node_count(model), node_count(ours), node_count(ortb)
        totals["orig"] += n_orig
        totals["ours"] += n_ours
        totals["ort"] += n_ort
        inputs = suite_inputs(case_dir, model, d) if case_dir else random_inputs(REAL[label], d)
        a = ort_outputs(model, inputs, os.path.join(d, "orig"))
        b = ort_outputs(ours, inputs, os.path.join(d, "opt"))
        worst = 0.0
        problem = None
        for name, x in a.items():
            y = b.get(name)
            if y is None or y.shape != x.shape:
                problem = f"output {name} missing or reshaped"
                break
            if x.dtype.kind == "f":
                err = np.abs(x.astype(np.float64) - y.astype(np.float64))
                tol = ATOL + RTOL * np.abs(x.astype(np.float64))
                worst = max(worst, float(np.max(err / tol)) if err.size else 0.0)
            elif not np.array_equal(x, y):
                problem = f"output {name} differs"
        line = f"{label}: nodes {n_orig} -> {n_ours} (onnxruntime basic {n_ort}), worst error/tolerance {worst:.3g}"
        if n_ours > n_ort:
            problem = problem or f"{n_ours} nodes, onnxruntime basic leaves {n_ort}"
        if worst > 1:
            problem = problem or "outputs differ beyond rtol 1e-4"
        print(("FAIL " if problem else "ok   ") + line + (f" -- {problem}" if problem else ""))
        if problem:
            failures.append(label)
    except Exception as e:  # noqa: BLE001 - one line per model, whatever failed
        print(f"FAIL {label}: {e}")
        failures.append(label)

print(f"{len(cases) - len(failures) - len(skipped)} of {len(cases) - len(skipped)} models pass ({len(skipped)} skipped: "
      f"onnxruntime cannot load them); nodes in total: original {totals['orig']}, "
      f"onnxtool {totals['ours']}, onnxruntime basic {totals['ort']}")
finish(failures)
