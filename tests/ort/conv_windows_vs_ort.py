#!/usr/bin/python3
"""Dynamic quantization of 1-D Convs (MatMulInteger over gathered windows), judged by
onnxruntime-node 1.30 on generated models.

Each case is one Conv of a drawn shape: input channels, output channels, kernel, stride,
dilation, pads (asymmetric too), bias or none, a batch of 1 or 3, and the time axis fixed or
symbolic, followed by a Relu or nothing. `onnxtool quantize --mode dynamic --op-types Conv` (the
flag only so that the speed estimate does not keep these small Convs float: a 1-D Conv of 8 or
more input channels is quantized by default) must write a model with a MatMulInteger and no Conv,
and on random inputs of other seeds
 - the quantized model agrees with the float one, in onnxruntime, at cosine >= 0.999 (a few
   quantization steps on inputs in [-1, 1]);
 - onnxtool's runner agrees with onnxruntime on the quantized model (graph optimizations off:
   both run the same graph) at cosine >= 0.99999 (the same integer products; max abs printed).
Prints one line per case and exits 1 on any failure.

Usage: conv_windows_vs_ort.py ONNXTOOL SOURCE_DIR CACHE_DIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ort_util import concatenated_outputs, cosine, finish, judge_setup, ort_batch, work_dir

onnxtool, source_dir, cache_dir, ort_run, env = judge_setup(sys.argv)
work = work_dir("onnxtool_conv_windows.")
CASES = 24


def make_case(seed):
    rng = np.random.default_rng(seed)
    c = int(rng.choice([8, 16, 40]))
    m = int(rng.choice([8, 24, 64]))
    k = int(rng.choice([1, 2, 3, 5, 7]))
    stride = int(rng.choice([1, 2, 3]))
    dilation = int(rng.choice([1, 1, 2]))
    pads = [int(rng.integers(0, k)), int(rng.integers(0, k))]
    batch = int(rng.choice([1, 3]))
    length = int(rng.integers((k - 1) * dilation + 1, 90))
    symbolic = bool(rng.integers(0, 2))
    bias = bool(rng.integers(0, 2))
    relu = bool(rng.integers(0, 2))
    w = (rng.uniform(-1, 1, (m, c, k)) / np.sqrt(c * k)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    inputs = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, m).astype(np.float32), "b"))
        inputs.append("b")
    nodes = [helper.make_node("Conv", inputs, ["conv" if relu else "y"], name="conv", kernel_shape=[k],
                              strides=[stride], dilations=[dilation], pads=pads)]
    if relu:
        nodes.append(helper.make_node("Relu", ["conv"], ["y"], name="relu"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, c, "T" if symbolic else length])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, "conv1d", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    label = (f"C {c} M {m} k {k} stride {stride} dilation {dilation} pads {pads} batch {batch} "
             f"T {'symbolic, ' if symbolic else ''}{length}{' bias' if bias else ''}{' relu' if relu else ''}")
    return model, label, (batch, c, length)


failed = False
for seed in range(CASES):
    model, label, shape = make_case(seed)
    case = os.path.join(work, f"case{seed}")
    os.makedirs(case)
    fp32, quantized = os.path.join(case, "fp32.onnx"), os.path.join(case, "q.onnx")
    onnx.save(model, fp32)
    r = subprocess.run([onnxtool, "quantize", fp32, "-o", quantized, "--mode", "dynamic", "--op-types", "Conv"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {label}: quantize exit {r.returncode}: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
        failed = True
        continue
    ops = [n.op_type for n in onnx.load(quantized).graph.node]
    if "MatMulInteger" not in ops or "Conv" in ops or "ConvInteger" in ops:
        print(f"FAIL {label}: not rewritten as windows: {sorted(set(ops))}")
        failed = True
        continue
    jobs_fp32, jobs_q = [], []
    for s in range(3):
        x = np.random.default_rng(1000 + seed * 10 + s).uniform(-1, 1, shape).astype(np.float32)
        path = os.path.join(case, f"x{s}.npy")
        np.save(path, x)
        jobs_fp32.append({"model": fp32, "inputs": {"x": path}, "output_dir": os.path.join(case, f"fp32_{s}")})
        jobs_q.append({"model": quantized, "inputs": {"x": path}, "output_dir": os.path.join(case, f"q_{s}")})
    try:
        ref = concatenated_outputs(ort_batch(ort_run, env, work, jobs_fp32))["y"]
        ort_q = concatenated_outputs(ort_batch(ort_run, env, work, jobs_q, level="disabled"))["y"]
    except RuntimeError as e:
        print(f"FAIL {label}: {e}")
        failed = True
        continue
    ours = []
    for s in range(3):
        out = os.path.join(case, f"ours_{s}")
        r = subprocess.run([onnxtool, "run", quantized, "--input", f"x={os.path.join(case, f'x{s}.npy')}",
                            "--output-dir", out], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {label}: run exit {r.returncode}: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
            failed = True
            break
        ours.append(np.load(os.path.join(out, "y.npy")).astype(np.float64).ravel())
    if len(ours) != 3:
        continue
    ours = np.concatenate(ours)
    accuracy, agreement = cosine(ref, ort_q), cosine(ours, ort_q)
    ok = accuracy >= 0.999 and agreement >= 0.99999 and ours.shape == ort_q.shape
    failed |= not ok
    print(f"{'ok  ' if ok else 'FAIL'} {label}: quantized vs fp32 cosine {accuracy:.5f}; ours vs onnxruntime "
          f"{agreement:.7f} (max abs {np.abs(ours - ort_q).max():.3g})")
finish(failed)
