#!/usr/bin/python3
"""The real models as onnxruntime optimizes them at its "extended" level, which writes its
com.microsoft ops (FusedConv, FusedGemm, FusedMatMul, QuickGelu, Gelu, DynamicQuantizeMatMul,
MatMulIntegerToFloat...), checked and run by onnxtool against onnxruntime running the same
optimized model.

For every model in CACHE_DIR/models and CACHE_DIR/models/bench: onnxruntime-node saves its
extended-level optimization (tests/ort/ort_run.js --batch, optimized_model); `onnxtool check`
must report 0 errors on it; then both run it (onnxruntime with its optimizations off: the saved
graph as it is) on seeded random inputs written here, and every output must satisfy

    |ours - ort| <= atol + rtol * |ort|,  rtol = 1e-3,  atol = 1e-5 * max(1, max |ort|)

(tests/cli/ort_crosscheck.sh's rule, for the same reason: float32 errors of deep networks scale
with the output's range). A model that needs a com.microsoft op onnxtool does not implement is
listed as skipped with the op (none of the 29 models today). Errors `onnxtool check` reports on the
original model too are not counted against the optimized one, and a model whose original
departs from onnxruntime as much on the same inputs is listed as such (not the ops' doing).
Exits 1 on any other mismatch or failure, 77 when the models are missing.

Usage: extended_models_vs_ort.py ONNXTOOL SOURCE_DIR CACHE_DIR
"""
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx

from ort_util import finish, judge_outputs, judge_setup, ort_batch, safe_name, skip_all, work_dir

onnxtool, source_dir, cache_dir, ort_run, env = judge_setup(sys.argv)
models = sorted(glob.glob(os.path.join(cache_dir, "models", "*.onnx")) +
                glob.glob(os.path.join(cache_dir, "models", "bench", "*.onnx")))
if not models:
    skip_all(f"no real models in {cache_dir}/models")
work = work_dir("onnxtool_extended.")
# Ops of other changes: a model whose run fails naming one of them is skipped, not failed.


def onnxruntime_nodes(model):
    """How many nodes of onnxruntime's domains the model has, subgraphs (If branches) included."""
    def nodes(g):
        for n in g.node:
            yield n
            for a in n.attribute:
                for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    yield from nodes(sub)
    return sum(1 for n in nodes(onnx.load(model, load_external_data=False).graph)
               if n.domain in ("com.microsoft", "com.microsoft.nchwc"))


names = [os.path.basename(m)[:-len(".onnx")] for m in models]
optimized = [os.path.join(work, n + ".extended.onnx") for n in names]
ort_batch(ort_run, env, work, [{"model": m, "optimized_model": o} for m, o in zip(models, optimized)], level="extended")

ELEM = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16, onnx.TensorProto.DOUBLE: np.float64,
        onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32, onnx.TensorProto.BOOL: np.bool_}


def dim_size(d, index, rank, model):
    """A size for an input dim: its own when static; for a symbolic one a batch of 1 (first
    axis, or a batch-named one, or the unnamed middle axis of a [2, batch, n] state), a 64x64
    image (48x320 for a text recognizer), 16000 audio samples, 512 VAD samples, a short
    sequence."""
    if d.HasField("dim_value"):
        return d.dim_value
    p = d.dim_param
    if index == 0 or "batch" in p or (not p and rank == 3):
        return 1
    if rank == 4:
        return (48 if index == 2 else 320) if "_rec" in model else 64
    if rank == 2:
        return 16000 if "samples" in p else 512
    return 3 if "past" in p else 10


def write_inputs(model, name):
    """Seeded random inputs of the model in a folder of its own: {input name: .npy path}."""
    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    folder = os.path.join(work, name + ".inputs")
    os.makedirs(folder)
    files = {}
    for i in m.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        dt = ELEM.get(t.elem_type)
        if dt is None:
            raise RuntimeError(f"{name}: input {i.name} has element type {t.elem_type}")
        rank = len(t.shape.dim)
        shape = [dim_size(d, k, rank, name) for k, d in enumerate(t.shape.dim)]
        if i.name == "sr":
            a = np.array(16000, dtype=dt).reshape(shape)  # Silero VAD's sample rate
        elif dt == np.bool_:
            a = np.ones(shape, dt)
        elif np.issubdtype(dt, np.integer):
            a = rng.integers(0, 10, shape).astype(dt)
        else:
            a = rng.uniform(-1, 1, shape).astype(dt)
        files[i.name] = os.path.join(folder, safe_name(i.name) + ".npy")
        np.save(files[i.name], a)
    return files


passed, failed, skipped, standard_only, inherited = [], [], [], [], []
# Every optimized model is checked, then run in both.
to_run = []
def check_errors(model):
    """The messages of the errors `onnxtool check` reports, or None when it cannot say."""
    r = subprocess.run([onnxtool, "check", model, "--json"], capture_output=True, text=True)
    try:
        return [e["message"] for e in json.loads(r.stdout)["errors"]]
    except (ValueError, KeyError):
        return None


originals = dict(zip(names, models))
for name, model in zip(names, optimized):
    errors = check_errors(model)
    # Errors the original model has too are not the optimization's.
    new_errors = errors if not errors else [e for e in errors if e not in (check_errors(originals[name]) or [])]
    if new_errors != []:
        failed.append(name)
        print(f"FAIL {name}: onnxtool check reports errors the original has not: {new_errors}")
        continue
    # Every saved model runs: those with only standard ops too (onnxruntime's rewrite of
    # standard ops is what they test).
    to_run.append((name, model))
    if not onnxruntime_nodes(model):
        standard_only.append(name)

inputs = [write_inputs(o, n) for n, o in to_run]
lines = ort_batch(ort_run, env, work, [{"model": o, "inputs": f, "output_dir": os.path.join(work, n + ".ort")}
                                       for (n, o), f in zip(to_run, inputs)], level="disabled")
worst_all = (0.0, "")
for (name, model), files, line in zip(to_run, inputs, lines):
    mine_dir = os.path.join(work, name + ".onnxtool")
    args = [a for n, f in files.items() for a in ("--input", f"{n}={f}")]
    r = subprocess.run([onnxtool, "run", model, *args, "--output-dir", mine_dir, "--quiet"], capture_output=True, text=True)
    if r.returncode:
        missing = re.search(r"no kernel for (com\.microsoft::\w+)", r.stderr)
        if missing:
            # An onnxruntime op outside the set runner/cpu/contrib.cpp implements: refused by name.
            skipped.append(name)
            print(f"skip {name}: needs {missing.group(1)}, which onnxtool does not implement yet")
        else:
            failed.append(name)
            print(f"FAIL {name}: onnxtool run: {r.stderr.strip()[:300]}")
        continue
    problem, worst = judge_outputs(line["outputs"], mine_dir, scale_atol=True)
    if problem:
        # The original model on the same inputs: when onnxtool departs from onnxruntime as much
        # there, the departure is not the com.microsoft ops'.
        orig_dir = os.path.join(work, name + ".original")
        r = subprocess.run([onnxtool, "run", originals[name], *args, "--output-dir", orig_dir, "--quiet"],
                           capture_output=True, text=True)
        orig_problem, orig_worst = judge_outputs(line["outputs"], orig_dir, scale_atol=True) if not r.returncode else (None, 0)
        if orig_problem and orig_worst >= worst / 2:
            inherited.append(name)
            print(f"known {name}: {problem}; the original model departs as much ({orig_problem})")
            continue
        failed.append(name)
        print(f"FAIL {name}: {problem}")
    else:
        passed.append(name)
        worst_all = max(worst_all, (worst, name))
        print(f"ok   {name} (worst error/tolerance {worst:.3g})")
print(f"{len(names)} extended-level optimized models: {len(passed)} run and match onnxruntime (worst "
      f"error/tolerance {worst_all[0]:.3g}, {worst_all[1]}; {len(standard_only)} of the models have only standard ops), "
      f"{len(inherited)} depart from it as much as the original model does, {len(failed)} fail, "
      f"{len(skipped)} skipped (ops not implemented here)")
finish(failed)
