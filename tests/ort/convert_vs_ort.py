#!/usr/bin/python3
"""onnxtool convert --opset, judged by onnxruntime-node 1.30.

1. Real models (PaddleOCR det/rec/cls, Silero VAD v5/v6 with If subgraphs) are converted up and
   down, round trips included (e.g. 9 -> 21 -> 9); onnxruntime runs the original and every
   conversion on the same real input; outputs must agree within rtol 1e-5 (atol 1e-6 of the
   output's largest magnitude, for elements near zero). Every conversion must pass
   `onnxtool check`.
2. Backend suite (node/): every test model is converted up to NEWEST, the newest opset
   onnxruntime 1.30 loads, and down to the lowest opset it can reach (tried from 7 upwards; an
   error naming the opset an operator was introduced at jumps there). onnxruntime runs the
   original and both conversions on the case's inputs; a conversion must keep the reference
   outputs (rtol 1e-3, atol 1e-5, the suite's own) wherever onnxruntime gets them right on the
   original. Cases onnxruntime cannot run at all, or whose inputs .npy cannot carry
   (sequences, optionals, bfloat16...), are counted as skipped; models below opset 7 are outside
   the converter's range and counted apart.
Prints one line per real conversion and per suite failure, then the counts; exits 1 on any failure.

Usage: convert_vs_ort.py ONNXTOOL SOURCE_DIR CACHE_DIR [BACKEND_DATA]
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from ort_util import finish, judge_setup, missing_data, work_dir

NEWEST = 26  # the newest default-domain opset onnxruntime-node 1.30 loads

# Conversions onnxtool refuses on purpose (exit 1 naming the node and why), with the reason.
EXPECTED_REFUSALS = {
    # Scan-8 carries a batch axis and sequence_lens that Scan-9 dropped; onnxtool does not
    # rebuild the batch as an outer Loop.
    "test_scan_sum": "Scan-8",
}

onnxtool, source_dir, cache_dir, ort_run, env = judge_setup(sys.argv)
backend = sys.argv[4] if len(sys.argv) > 4 else "/usr/share/libonnx-testdata/data"

work = work_dir("onnxtool_convert_ort.")
failures = []


def safe(name):
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)


def convert(model, out, opset):
    """Runs onnxtool convert; returns None on success, else its one-line error."""
    # --no-verify: this script judges every conversion against onnxruntime on the suite's own
    # inputs, a stronger check; many suite models cannot run on random inputs (CumSum axes,
    # integer divisors, indices), so the built-in check would refuse rather than judge them.
    r = subprocess.run([onnxtool, "convert", model, "-o", out, "--opset", str(opset), "--no-verify"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return (r.stderr.strip().splitlines() or ["failed"])[-1]
    return None


def checks(model):
    return subprocess.run([onnxtool, "check", model], capture_output=True).returncode == 0


def ort_batch(jobs):
    """Runs every job in one onnxruntime-node process; returns {output_dir: (ok, error, {name: array})}."""
    path = os.path.join(work, f"jobs_{len(os.listdir(work))}.json")
    with open(path, "w") as f:
        json.dump(jobs, f)
    r = subprocess.run(["node", ort_run, "--batch", path, "--threads", "1"], capture_output=True, text=True, env=env)
    results = {}
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    for job, line in zip(jobs, lines):
        outs = {o["name"]: np.load(o["file"]) for o in line["outputs"]} if line["ok"] else {}
        results[job["output_dir"]] = (line["ok"], line.get("error", ""), outs)
    for job in jobs[len(lines):]:  # the process died: the rest count as failed runs
        results[job["output_dir"]] = (False, "onnxruntime-node stopped: " + (r.stderr.strip()[-200:] or "?"), {})
    return results


def close(expected, actual, rtol, atol_scale):
    """(ok, worst error/tolerance); atol is atol_scale times the output's largest magnitude (at least 1)."""
    if expected.shape != actual.shape or expected.dtype != actual.dtype:
        return False, float("inf")
    if expected.dtype.kind not in "fc":
        return bool(np.array_equal(expected, actual)), 0.0
    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    if not np.array_equal(np.isnan(e), np.isnan(a)):
        return False, float("inf")
    mask = ~np.isnan(e)
    if not mask.any():
        return True, 0.0
    atol = atol_scale * max(1.0, float(np.max(np.abs(e[mask]))))
    ratio = np.abs(e[mask] - a[mask]) / (atol + rtol * np.abs(e[mask]))
    # Infinities: equal values give nan ratios (inf - inf); they match.
    ratio = np.where(np.isnan(ratio), 0.0, ratio)
    worst = float(np.max(ratio)) if ratio.size else 0.0
    return worst <= 1.0, worst


# ---- 1. real models ------------------------------------------------------------------------------

REAL_CHAINS = {
    "ch_PP-OCRv4_det_infer": [[13], [17], [21], [NEWEST], [21, 11], [10]],
    "ch_PP-OCRv4_rec_infer": [[11], [13], [21], [NEWEST], [21, 9]],
    "ch_ppocr_mobile_v2.0_cls_infer": [[13], [NEWEST], [NEWEST, 9]],
    "silero_vad_v5": [[13], [21], [NEWEST], [21, 16], [11]],
    "silero_vad_v6": [[17], [NEWEST], [NEWEST, 16]],
}


def real_inputs():
    """The first real input set of each model (tests/make_real_inputs.py), or None."""
    r = subprocess.run(["/usr/bin/python3", os.path.join(source_dir, "tests", "make_real_inputs.py"), cache_dir],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    inputs_dir = r.stdout.strip().splitlines()[-1]
    sets = {}
    with open(os.path.join(inputs_dir, "manifest.tsv")) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            model = os.path.splitext(os.path.basename(fields[0]))[0]
            if model in sets:
                continue
            sets[model] = {kv.split("=", 1)[0]: os.path.join(inputs_dir, kv.split("=", 1)[1])
                           for field in fields[2:] for kv in field.split()}
    return sets


real_total = real_pass = 0
sets = real_inputs()
if sets is None:
    missing_data("real model inputs: tests/make_real_inputs.py could not make them (python3-skimage, espeak-ng)")
else:
    for name, chains in REAL_CHAINS.items():
        model = os.path.join(cache_dir, "models", name + ".onnx")
        if not os.path.exists(model) or name not in sets:
            missing_data(f"{name}: model or input")
            continue
        d = os.path.join(work, name)
        os.makedirs(d)
        jobs = [{"model": model, "inputs": sets[name], "output_dir": os.path.join(d, "orig")}]
        made = []
        for chain in chains:
            label = "->".join(str(v) for v in chain)
            src, problem = model, None
            for step, opset in enumerate(chain):
                out = os.path.join(d, "op" + "_".join(str(v) for v in chain[: step + 1]) + ".onnx")
                problem = convert(src, out, opset)
                if problem:
                    break
                if not checks(out):
                    problem = "the conversion does not pass onnxtool check"
                    break
                src = out
            real_total += 1
            if problem:
                print(f"FAIL {name} {label}: {problem}")
                failures.append(f"{name} {label}")
                continue
            made.append((label, os.path.join(d, "out_" + safe(label))))
            jobs.append({"model": src, "inputs": sets[name], "output_dir": made[-1][1]})
        results = ort_batch(jobs)
        ok0, err0, ref = results[jobs[0]["output_dir"]]
        if not ok0:
            print(f"FAIL {name}: onnxruntime cannot run the original: {err0}")
            failures.append(name)
            continue
        for label, out_dir in made:
            ok, err, outs = results[out_dir]
            worst, problem = 0.0, None if ok else f"onnxruntime: {err}"
            for oname, expected in ref.items():
                if problem:
                    break
                if oname not in outs:
                    problem = f"output {oname} missing"
                    break
                good, w = close(expected, outs[oname], 1e-5, 1e-6)
                worst = max(worst, w)
                if not good:
                    problem = f"output {oname} differs (error/tolerance {w:.3g})"
            print(("FAIL " if problem else "ok   ") + f"{name} opset {label}: worst error/tolerance {worst:.3g}" +
                  (f" -- {problem}" if problem else ""))
            if problem:
                failures.append(f"{name} {label}")
            else:
                real_pass += 1

# ---- 2. the backend suite ----------------------------------------------------------------------


def model_opset(m):
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def case_arrays(case_dir, m):
    """Inputs (name -> array) and reference outputs (list) of test_data_set_0; None when .npy cannot carry them."""
    inits = {t.name for t in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    ds = os.path.join(case_dir, "test_data_set_0")
    inputs, outputs = {}, []
    for k, name in enumerate(names):
        pb = os.path.join(ds, f"input_{k}.pb")
        if not os.path.exists(pb):
            continue  # an omitted optional input
        t = onnx.TensorProto()
        with open(pb, "rb") as f:
            t.ParseFromString(f.read())
        if t.data_type in (onnx.TensorProto.BFLOAT16, onnx.TensorProto.STRING, onnx.TensorProto.UNDEFINED) or t.data_type > 16:
            return None
        inputs[name] = numpy_helper.to_array(t)
    k = 0
    while os.path.exists(os.path.join(ds, f"output_{k}.pb")):
        t = onnx.TensorProto()
        with open(os.path.join(ds, f"output_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        if t.data_type in (onnx.TensorProto.BFLOAT16, onnx.TensorProto.STRING, onnx.TensorProto.UNDEFINED) or t.data_type > 16:
            return None
        outputs.append(numpy_helper.to_array(t))
        k += 1
    if not outputs or len(outputs) != len(m.graph.output):
        return None
    return inputs, outputs


def lowest_reachable(model, opset, out):
    """Converts down to the lowest opset it can; returns that opset, or None."""
    target = 7
    while target < opset:
        err = convert(model, out, target)
        if err is None:
            return target
        jump = re.search(r"introduced in opset (\d+)", err)
        target = max(target + 1, int(jump.group(1)) if jump else 0)
    return None


counts = {"no_kernel": 0, "refused": 0, "cases": 0, "below7": 0, "unrunnable": 0, "untransportable": 0, "up_pass": 0, "up_fail": 0, "up_same": 0,
          "down_pass": 0, "down_fail": 0, "down_none": 0}
node_dir = os.path.join(backend, "node")
cases = sorted(os.listdir(node_dir)) if os.path.isdir(node_dir) else []
# CONVERT_CASE_STRIDE=K takes every K-th case: the sanitizer build, whose process start-up and
# checks make a thousand conversions chains too slow for ctest's budget, runs a tenth of them.
stride = int(os.environ.get("CONVERT_CASE_STRIDE", "1"))
if stride > 1:
    cases = cases[::stride]
    print(f"backend suite: every {stride}th case ({len(cases)})")
jobs, plan = [], []
for case in cases:
    case_dir = os.path.join(node_dir, case)
    model = os.path.join(case_dir, "model.onnx")
    try:
        m = onnx.load(model, load_external_data=False)
    except Exception:  # noqa: BLE001 - a model the old python3-onnx cannot parse: let onnxtool alone judge it
        counts["untransportable"] += 1
        continue
    counts["cases"] += 1
    opset = model_opset(m)
    if opset < 7:
        counts["below7"] += 1
        continue
    try:
        arrays = case_arrays(case_dir, m)
    except Exception:  # noqa: BLE001 - test data the old python3-onnx cannot decode
        arrays = None
    if arrays is None:
        counts["untransportable"] += 1
        continue
    d = os.path.join(work, "suite", case)
    os.makedirs(d)
    inputs = {}
    for name, a in arrays[0].items():
        inputs[name] = os.path.join(d, safe(name) + ".npy")
        np.save(inputs[name], a)
    entry = {"case": case, "opset": opset, "refs": arrays[1], "orig": os.path.join(d, "orig")}
    jobs.append({"model": model, "inputs": inputs, "output_dir": entry["orig"]})
    if opset < NEWEST:
        up = os.path.join(d, f"up{NEWEST}.onnx")
        err = convert(model, up, NEWEST)
        if err:
            entry["up_error"] = err
        else:
            entry["up"] = os.path.join(d, "up")
            jobs.append({"model": up, "inputs": inputs, "output_dir": entry["up"]})
    down = os.path.join(d, "down.onnx")
    low = lowest_reachable(model, opset, down) if opset > 7 else None
    if low is not None:
        entry["down"] = os.path.join(d, "down")
        entry["low"] = low
        jobs.append({"model": down, "inputs": inputs, "output_dir": entry["down"]})
    plan.append(entry)

results = ort_batch(jobs) if jobs else {}


def matches_refs(outs_result, refs):
    ok, err, outs = outs_result
    if not ok:
        if "Could not find an implementation" in err:
            return None, err  # onnxruntime has no kernel for that operator version
        return False, f"onnxruntime: {err}"
    values = list(outs.values())
    if len(values) != len(refs):
        return False, "output count differs"
    for k, (ref, got) in enumerate(zip(refs, values)):
        good, w = close(ref, got, 1e-3, 1e-5)
        if not good:
            return False, f"output {k} differs from the reference (error/tolerance {w:.3g})"
    return True, ""


def judge(e, direction, opset):
    """Counts and prints whether the conversion of case e in `direction` ("up" or "down", to
    `opset`) matches onnxruntime's outputs on the original."""
    ok, why = matches_refs(results[e[direction]], e["refs"])
    if ok is None:
        counts["no_kernel"] += 1
        print(f"note {e['case']} opset {e['opset']} -> {opset}: {why}")
    else:
        counts[f"{direction}_pass" if ok else f"{direction}_fail"] += 1
    if ok is False:
        print(f"FAIL {e['case']} opset {e['opset']} -> {opset}: {why}")
        failures.append(e["case"])


for e in plan:
    base_ok, _ = matches_refs(results[e["orig"]], e["refs"])
    if not base_ok:
        counts["unrunnable"] += 1  # onnxruntime itself cannot run or match the original
        continue
    if e["opset"] >= NEWEST:
        counts["up_same"] += 1
    elif "up_error" in e:
        if e["case"] in EXPECTED_REFUSALS and EXPECTED_REFUSALS[e["case"]] in e["up_error"]:
            counts["refused"] += 1
            print(f"refused (expected) {e['case']} opset {e['opset']} -> {NEWEST}: {e['up_error']}")
        else:
            counts["up_fail"] += 1
            print(f"FAIL {e['case']} opset {e['opset']} -> {NEWEST}: {e['up_error']}")
            failures.append(e["case"])
    else:
        judge(e, "up", NEWEST)
    if "down" not in e:
        counts["down_none"] += 1
    else:
        judge(e, "down", e["low"])

print(f"real models: {real_pass} of {real_total} conversions match onnxruntime on the original within rtol 1e-5")
print(f"backend suite node/: {counts['cases']} cases; {counts['below7']} below opset 7 (outside 7-28), "
      f"{counts['untransportable']} with inputs .npy cannot carry, {counts['unrunnable']} onnxruntime cannot run or "
      f"match on the original")
print(f"  up to opset {NEWEST}: {counts['up_pass']} keep the reference outputs, {counts['up_fail']} fail, "
      f"{counts['refused']} refused as expected, {counts['up_same']} already at {NEWEST} or above")
print(f"  down to the lowest reachable opset: {counts['down_pass']} keep the reference outputs, {counts['down_fail']} fail, "
      f"{counts['down_none']} cannot go lower (operators introduced at their opset)")
print(f"  {counts['no_kernel']} conversions onnxruntime has no kernel for (that operator version is missing in onnxruntime)")
finish(failures)
