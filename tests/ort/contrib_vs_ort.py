#!/usr/bin/python3
"""onnxruntime's com.microsoft ops that onnxtool runs (runner/cpu/contrib.cpp) against
onnxruntime-node, on one-node models over a grid of attributes and inputs.

Each case is a model written here with python3-onnx and seeded random inputs; onnxruntime runs
them all in one process (graph optimizations disabled, so that it runs the node as written) and
onnxtool runs each one. Float outputs must agree within rtol 1e-3 / atol 1e-5. The quantized
products (DynamicQuantizeMatMul, MatMulIntegerToFloat) are exact int32 sums scaled in float as
onnxruntime does, so they are held to the same tolerance. QuantizeLinear's integer outputs must
be equal. Exits 1 on any mismatch or onnxtool failure.

Usage: contrib_vs_ort.py ONNXTOOL SOURCE_DIR CACHE_DIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ort_util import SanitizerSample, finish, judge_outputs, judge_setup, ort_batch, work_dir

onnxtool, source_dir, cache_dir, ort_run, env = judge_setup(sys.argv)
work = work_dir("onnxtool_contrib.")
rng = np.random.default_rng(0)
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int8): TensorProto.INT8,
        np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int16): TensorProto.INT16,
        np.dtype(np.uint16): TensorProto.UINT16, np.dtype(np.int32): TensorProto.INT32}
cases = []  # (name, model path, {input: npy}, output names)
SAMPLE = SanitizerSample()


def floats(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def ints(dtype, *shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def case(name, op, inputs, attrs=None, outputs=1, out_type=TensorProto.FLOAT):
    """One node `op` of com.microsoft over `inputs` [(name, array or None for omitted)]: arrays
    named as graph inputs, omitted ones as ''; the outputs declared of `out_type`."""
    if not SAMPLE.keep(op):
        return
    d = os.path.join(work, name)
    os.makedirs(d)
    names, graph_inputs, files = [], [], {}
    for n, a in inputs:
        if a is None:
            names.append("")
            continue
        names.append(n)
        graph_inputs.append(helper.make_tensor_value_info(n, ELEM[a.dtype], list(a.shape)))
        files[n] = os.path.join(d, n + ".npy")
        np.save(files[n], a)
    outs = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, outs, domain="com.microsoft", **(attrs or {}))
    graph = helper.make_graph([node], name, graph_inputs,
                              [helper.make_tensor_value_info(o, out_type, None) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    cases.append((name, path, files))


# FusedConv: every activation with and without Z, and grouped / strided / padded geometries.
acts = [("none", None, None), ("relu", "Relu", None), ("tanh", "Tanh", None), ("sigmoid", "Sigmoid", None),
        ("leaky", "LeakyRelu", [0.1]), ("clip", "Clip", [-0.5, 0.4]), ("hardsigmoid", "HardSigmoid", [0.3, 0.4])]
for tag, act, params in acts:
    for with_z in (False, True):
        attrs = {"pads": [1, 1, 1, 1]}
        if act:
            attrs["activation"] = act
        if params:
            attrs["activation_params"] = params
        case(f"FusedConv_{tag}{'_z' if with_z else ''}", "FusedConv",
             [("X", floats(1, 4, 7, 7)), ("W", floats(6, 4, 3, 3)), ("B", floats(6)),
              ("Z", floats(1, 6, 7, 7) if with_z else None)], attrs)
case("FusedConv_group_stride", "FusedConv", [("X", floats(2, 4, 9, 8)), ("W", floats(6, 2, 3, 2))],
     {"activation": "Relu", "group": 2, "strides": [2, 1], "pads": [1, 0, 1, 1], "dilations": [1, 2]})
case("FusedConv_depthwise", "FusedConv", [("X", floats(1, 8, 10, 10)), ("W", floats(8, 1, 3, 3)), ("B", floats(8))],
     {"activation": "Clip", "activation_params": [0.0, 6.0], "group": 8, "pads": [1, 1, 1, 1]})
case("FusedConv_1d", "FusedConv", [("X", floats(1, 3, 20)), ("W", floats(5, 3, 4)), ("B", floats(5))],
     {"activation": "Sigmoid", "strides": [2]})
case("FusedConv_pointwise_z", "FusedConv", [("X", floats(1, 16, 6, 6)), ("W", floats(8, 16, 1, 1)), ("B", None),
                                            ("Z", floats(1, 8, 6, 6))], {"activation": "LeakyRelu", "activation_params": [0.2]})

# FusedGemm: transposes, C shapes, alpha/beta, activations.
gemm_acts = [("relu", "Relu", {}), ("leaky", "LeakyRelu", {"activation_alpha": 0.2}), ("sigmoid", "Sigmoid", {}),
             ("tanh", "Tanh", {}), ("hardsigmoid", "HardSigmoid", {"activation_alpha": 0.3, "activation_beta": 0.6})]
for tag, act, extra in gemm_acts:
    case(f"FusedGemm_{tag}", "FusedGemm", [("A", floats(3, 5)), ("B", floats(5, 4)), ("C", floats(4))],
         {"activation": act, **extra})
for ta in (0, 1):
    for tb in (0, 1):
        for cshape in ((), (3, 4), (3, 1)):
            a = floats(5, 3) if ta else floats(3, 5)
            b = floats(4, 5) if tb else floats(5, 4)
            c = floats(*cshape) if cshape else None
            case(f"FusedGemm_t{ta}{tb}_c{'x'.join(map(str, cshape)) or 'none'}", "FusedGemm",
                 [("A", a), ("B", b), ("C", c)],
                 {"activation": "Relu", "transA": ta, "transB": tb, "alpha": 0.7, "beta": 1.3})

# FusedMatMul / TransposeMatMul: transposes, batch transposes, broadcast batch dims, 1-D operands.
mm = [("batched", (2, 3, 4, 5), (2, 3, 5, 6)), ("broadcast", (2, 1, 4, 5), (3, 5, 6)), ("b2d", (2, 4, 5), (5, 6)),
      ("vec_b", (3, 4, 5), (5,)), ("vec_a", (5,), (2, 5, 6))]
for tag, sa, sb in mm:
    for ta in (0, 1):
        for tb in (0, 1):
            if tag == "vec_b" and ta:
                # onnxruntime 1.30 departs from its documentation here: with a 1-D B it reads A
                # as not transposed (A [3,5,4] as [3,4,5]); onnxtool transposes it as documented.
                continue
            # Transposed operands hold the same product: store them transposed.
            a = floats(*sa)
            b = floats(*sb)
            if ta and len(sa) > 1:
                a = np.ascontiguousarray(np.swapaxes(a, -1, -2))
            if tb and len(sb) > 1:
                b = np.ascontiguousarray(np.swapaxes(b, -1, -2))
            attrs = {"transA": ta, "transB": tb}
            case(f"FusedMatMul_{tag}_t{ta}{tb}", "FusedMatMul", [("A", a), ("B", b)], {**attrs, "alpha": 0.5})
            if tag == "batched":
                case(f"TransposeMatMul_{tag}_t{ta}{tb}", "TransposeMatMul", [("A", a), ("B", b)], attrs)
for ta in (0, 1):
    for tb in (0, 1):
        # transBatch: A stored [M, batch, K] (or [K, batch, M] with transA), B [K, batch, N].
        a = floats(4, 3, 5) if not ta else floats(5, 3, 4)
        b = floats(5, 3, 6) if not tb else floats(6, 3, 5)
        case(f"FusedMatMul_transbatch_t{ta}{tb}", "FusedMatMul", [("A", a), ("B", b)],
             {"transA": ta, "transB": tb, "transBatchA": 1, "transBatchB": 1, "alpha": 2.0})
case("FusedMatMul_transbatch_a_only", "FusedMatMul", [("A", floats(4, 2, 3, 5)), ("B", floats(2, 3, 5, 6))],
     {"transBatchA": 1})

# The Gelu family.
case("QuickGelu_default", "QuickGelu", [("X", floats(2, 3, 17, lo=-6, hi=6))])
case("QuickGelu_alpha1", "QuickGelu", [("X", floats(2, 40, lo=-6, hi=6))], {"alpha": 1.0})
case("Gelu", "Gelu", [("X", floats(3, 33, lo=-5, hi=5))])
case("FastGelu", "FastGelu", [("X", floats(2, 3, 16, lo=-5, hi=5))])
case("FastGelu_bias", "FastGelu", [("X", floats(2, 3, 16, lo=-5, hi=5)), ("bias", floats(16))])
case("BiasGelu", "BiasGelu", [("A", floats(2, 5, 12, lo=-5, hi=5)), ("B", floats(12))])

# DynamicQuantizeMatMul: int8/uint8 B, scalar and per-column scales and zero points, bias.
for bt in (np.int8, np.uint8):
    for per_col in (False, True):
        for zp in ("none", "scalar", "column"):
            for bias in (False, True):
                n = 6
                b = ints(bt, 8, n)
                scale = floats(n, lo=0.01, hi=0.05) if per_col else np.array(0.02, np.float32)
                z = None if zp == "none" else ints(bt, n) if zp == "column" else ints(bt)
                case(f"DynamicQuantizeMatMul_{np.dtype(bt).name}_{'col' if per_col else 'tensor'}_zp{zp}{'_bias' if bias else ''}",
                     "DynamicQuantizeMatMul",
                     [("A", floats(2, 3, 8, lo=-2, hi=3)), ("B", b), ("b_scale", scale), ("b_zero_point", z),
                      ("bias", floats(n) if bias else None)])
case("DynamicQuantizeMatMul_batched_b", "DynamicQuantizeMatMul",
     [("A", floats(2, 3, 8)), ("B", ints(np.int8, 2, 8, 5)), ("b_scale", np.array(0.03, np.float32))])

# MatMulIntegerToFloat: the A/B type pairs onnxruntime has kernels for (not int8 A with uint8
# B), zero points, per-column B parameters, bias.
for at, bt in ((np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)):
    for per_col in (False, True):
        for zps in (False, True):
            n = 5
            b_scale = floats(n, lo=0.01, hi=0.05) if per_col else np.array(0.03, np.float32)
            b_zero = (ints(bt, n) if per_col else ints(bt)) if zps else None
            case(f"MatMulIntegerToFloat_{np.dtype(at).name}_{np.dtype(bt).name}_{'col' if per_col else 'tensor'}{'_zp' if zps else ''}",
                 "MatMulIntegerToFloat",
                 [("A", ints(at, 2, 4, 7)), ("B", ints(bt, 7, n)), ("a_scale", np.array(0.05, np.float32)),
                  ("b_scale", b_scale), ("a_zero_point", ints(at) if zps else None), ("b_zero_point", b_zero),
                  ("bias", floats(n) if zps else None)])

# com.microsoft QuantizeLinear / DequantizeLinear, the forms onnxruntime's quantizer writes for
# 16-bit types: per tensor and per axis, with and without zero points, values beyond the range
# (saturation) and halfway cases (round half to even).
for qt in (np.int8, np.uint8, np.int16, np.uint16):
    info = np.iinfo(qt)
    for axis in (None, 1, 2):
        n = {None: 1, 1: 3, 2: 5}[axis]
        scale = np.array(0.02, np.float32) if axis is None else floats(n, lo=0.01, hi=0.05)
        zero = ints(qt) if axis is None else ints(qt, n)
        tag = f"{np.dtype(qt).name}_{'tensor' if axis is None else f'axis{axis}'}"
        x = floats(2, 3, 5, lo=-40.0, hi=40.0) * (200 if np.dtype(qt).itemsize == 2 else 1)
        x.flat[:4] = np.array([0.5, 1.5, -0.5, -2.5], np.float32) * scale.flat[0]
        attrs = {} if axis is None else {"axis": axis}
        case(f"QuantizeLinear_{tag}", "QuantizeLinear", [("x", x), ("y_scale", scale), ("y_zero_point", zero)],
             attrs, out_type=ELEM[np.dtype(qt)])
        case(f"DequantizeLinear_{tag}", "DequantizeLinear",
             [("x", ints(qt, 2, 3, 5)), ("x_scale", scale), ("x_zero_point", zero)], attrs)
case("QuantizeLinear_no_zero_point", "QuantizeLinear", [("x", floats(4, 6)), ("y_scale", np.array(0.01, np.float32))],
     out_type=TensorProto.UINT8)
case("DequantizeLinear_int32", "DequantizeLinear",
     [("x", rng.integers(-100000, 100000, (4, 6)).astype(np.int32)), ("x_scale", np.array(0.001, np.float32))])

jobs = [{"model": path, "inputs": files, "output_dir": os.path.join(os.path.dirname(path), "ort")}
        for _, path, files in cases]
for j in jobs:
    os.makedirs(j["output_dir"])
lines = ort_batch(ort_run, env, work, jobs, level="disabled")
passed, failed = [], []
worst_all = 0.0
for (name, path, files), line in zip(cases, lines):
    mine_dir = os.path.join(os.path.dirname(path), "onnxtool")
    args = [a for n, f in files.items() for a in ("--input", f"{n}={f}")]
    r = subprocess.run([onnxtool, "run", path, *args, "--output-dir", mine_dir, "--quiet"], capture_output=True, text=True)
    if r.returncode:
        failed.append(name)
        print(f"FAIL {name}: onnxtool: {r.stderr.strip()}")
        continue
    problem, worst = judge_outputs(line["outputs"], mine_dir)
    if problem:
        failed.append(name)
        print(f"FAIL {name}: {problem}")
    else:
        passed.append(name)
        worst_all = max(worst_all, worst)
        print(f"ok   {name} (worst error/tolerance {worst:.3g})")
print(f"{len(passed)} of {len(cases)} com.microsoft cases match onnxruntime (worst error/tolerance {worst_all:.3g}), "
      f"{len(failed)} differ{SAMPLE.note()}")
finish(failed)
