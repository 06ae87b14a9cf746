#!/usr/bin/python3
"""onnxruntime's quantized com.microsoft ops that onnxtool runs (runner/cpu/contrib_quant.cpp)
against onnxruntime-node, on one-node models over a grid of attributes, shapes, broadcasts,
scales and zero points, int8 and uint8.

Each case is a model written here with python3-onnx: the quantized data are graph inputs
(seeded random bytes, or every byte value for the table-driven activations), the scales and
zero points initializers, as onnxruntime's quantizer writes them. onnxruntime runs them all in
one process (graph optimizations disabled, so that it runs the node as written) and onnxtool
runs each one. Each model, its output declared with the shape and type onnxruntime returned,
must also pass `onnxtool check` with no error or warning (the shape functions). Forms
onnxruntime has no kernel for (int8 A with uint8 B in QGemm, a per-channel scale in QLinearAdd)
must be refused with a line naming the node and the reason.

Rule: quantized outputs must equal onnxruntime's byte for byte (the kernels repeat its float
operations in its order; QLinearSigmoid's table is the one place where a sigmoid computed
otherwise could move an entry on a rounding boundary by a step, and on this grid none moves).
QGemm's float outputs (no y_zero_point) must agree within rtol 1e-6. Per case and in the summary
the script prints how many values differ and by how many steps. Exits 1 on any difference or
onnxtool failure.

Usage: contrib_quant_vs_ort.py ONNXTOOL SOURCE_DIR CACHE_DIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ort_util import SanitizerSample, finish, judge_setup, ort_batch, work_dir

onnxtool, source_dir, cache_dir, ort_run, env = judge_setup(sys.argv)
work = work_dir("onnxtool_contrib_quant.")
rng = np.random.default_rng(0)
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int8): TensorProto.INT8,
        np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int32): TensorProto.INT32,
        np.dtype(np.bool_): TensorProto.BOOL}
cases = []  # (name, op, model path, {input: npy})
SAMPLE = SanitizerSample()


def ints(dtype, *shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def scalar(dtype, v):
    return np.array(v, dtype=dtype)


def write_model(name, op, inputs, out_type, attrs=None):
    """One node `op` of com.microsoft, named 'q' + name. `inputs` is [(name, array, is_data)]: data arrays become
    graph inputs fed from .npy files, the others initializers; None is an omitted input, named ''
    even at the end (onnxruntime's QLinear activations read their last input's slot)."""
    d = os.path.join(work, name)
    os.makedirs(d)
    names, graph_inputs, inits, files = [], [], [], {}
    for n, a, is_data in inputs:
        if a is None:
            names.append("")
            continue
        names.append(n)
        if is_data:
            graph_inputs.append(helper.make_tensor_value_info(n, ELEM[a.dtype], list(a.shape)))
            files[n] = os.path.join(d, n + ".npy")
            np.save(files[n], a)
        else:
            inits.append(numpy_helper.from_array(a, n))
    node = helper.make_node(op, names, ["y"], domain="com.microsoft", name="q" + name, **(attrs or {}))
    graph = helper.make_graph([node], name, graph_inputs, [helper.make_tensor_value_info("y", out_type, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    return path, files


def case(name, op, inputs, out_type, attrs=None):
    """A case judged by onnxruntime (write_model's arguments)."""
    if not SAMPLE.keep(op):
        return
    path, files = write_model(name, op, inputs, out_type, attrs)
    cases.append((name, op, path, files))


TYPES = [(np.int8, "i8"), (np.uint8, "u8")]


def zp(dtype, centre_only=False):
    """A zero point of the type: its middle for uint8, near 0 for int8, plus a random offset."""
    mid = 128 if dtype == np.uint8 else 0
    return scalar(dtype, mid if centre_only else mid + int(rng.integers(-20, 21)))


# QLinearAdd / QLinearMul: shapes with every broadcast pattern, three sets of scales. (Their
# zero points are never omitted: onnxruntime 1.30's type inference refuses such a model.)
binary_shapes = [("same", (2, 3, 4, 5), (2, 3, 4, 5)), ("row", (2, 3, 4, 37), (37,)), ("col", (2, 3, 4, 5), (3, 1, 1)),
                 ("outer", (3, 1), (1, 40)), ("a_scalar", (), (3, 41)), ("b_scalar", (5, 33), ()),
                 ("long", (1000,), (1000,))]
binary_scales = {"QLinearAdd": [(0.02, 0.03, 0.05), (0.1, 0.1, 0.1), (0.004, 0.5, 0.07)],
                 "QLinearMul": [(0.02, 0.03, 0.001), (0.1, 0.1, 0.1), (0.004, 0.5, 0.01)]}
for op in ("QLinearAdd", "QLinearMul"):
    for dt, tag in TYPES:
        for sname, sa_shape, sb_shape in binary_shapes:
            for si, (sa, sb, sc) in enumerate(binary_scales[op]):
                case(f"{op}_{tag}_{sname}_s{si}", op,
                     [("A", ints(dt, *sa_shape), True), ("A_scale", scalar(np.float32, sa), False),
                      ("A_zero_point", zp(dt), False),
                      ("B", ints(dt, *sb_shape), True), ("B_scale", scalar(np.float32, sb), False),
                      ("B_zero_point", zp(dt), False),
                      ("C_scale", scalar(np.float32, sc), False), ("C_zero_point", zp(dt), False)],
                     ELEM[np.dtype(dt)])

# QLinearSigmoid / QLinearLeakyRelu: every byte value, several scales and alphas.
act_params = [(0.05, 1.0 / 256), (0.1, 0.02), (0.01, 0.003)]
for dt, tag in TYPES:
    every = np.arange(256, dtype=np.uint8).view(dt).reshape(4, 64)
    for pi, (xs, ys) in enumerate(act_params):
        y_zero = scalar(dt, -128 if dt == np.int8 else 0) if ys == 1.0 / 256 else zp(dt)
        case(f"QLinearSigmoid_{tag}_p{pi}", "QLinearSigmoid",
             [("X", every, True), ("X_scale", scalar(np.float32, xs), False), ("X_zero_point", zp(dt), False),
              ("Y_scale", scalar(np.float32, ys), False), ("Y_zero_point", y_zero, False)], ELEM[np.dtype(dt)])
        for alpha in (0.01, 0.2):
            case(f"QLinearLeakyRelu_{tag}_p{pi}_a{alpha}", "QLinearLeakyRelu",
                 [("X", every, True), ("X_scale", scalar(np.float32, xs), False), ("X_zero_point", zp(dt), False),
                  ("Y_scale", scalar(np.float32, ys * 0.8), False), ("Y_zero_point", zp(dt), False)],
                 ELEM[np.dtype(dt)], {"alpha": alpha})
case("QLinearLeakyRelu_u8_nozp", "QLinearLeakyRelu",
     [("X", ints(np.uint8, 3, 50), True), ("X_scale", scalar(np.float32, 0.05), False), ("X_zero_point", None, False),
      ("Y_scale", scalar(np.float32, 0.04), False), ("Y_zero_point", None, False)], TensorProto.UINT8)

# QLinearConcat: axes, three inputs with their own parameters (one the output's).
for dt, tag in TYPES:
    for axis in (0, 1, -1):
        shapes = []
        for k in (2, 3, 1):
            s = [2, 3, 4]
            s[axis] = k
            shapes.append(s)
        y_scale, y_zero = scalar(np.float32, 0.05), zp(dt)
        inputs = [("Y_scale", y_scale, False), ("Y_zero_point", y_zero, False)]
        params = [(y_scale, y_zero), (scalar(np.float32, 0.02), zp(dt)), (scalar(np.float32, 0.11), zp(dt))]
        for i, (s, (xs, xz)) in enumerate(zip(shapes, params)):
            inputs += [(f"X{i}", ints(dt, *s), True), (f"X{i}_scale", xs, False), (f"X{i}_zero_point", xz, False)]
        case(f"QLinearConcat_{tag}_axis{axis}", "QLinearConcat", inputs, ELEM[np.dtype(dt)], {"axis": axis})

# QLinearGlobalAveragePool: channels first and last, 1-D to 3-D planes.
for dt, tag in TYPES:
    for last in (0, 1):
        for shape in ((1, 3, 5, 5), (2, 8, 7, 3), (1, 4, 16), (1, 2, 3, 4, 5)):
            for si, (xs, ys) in enumerate(((0.05, 0.04), (0.02, 0.1))):
                case(f"QLinearGlobalAveragePool_{tag}_last{last}_{'x'.join(map(str, shape))}_s{si}",
                     "QLinearGlobalAveragePool",
                     [("X", ints(dt, *shape), True), ("x_scale", scalar(np.float32, xs), False), ("x_zero_point", zp(dt), False),
                      ("y_scale", scalar(np.float32, ys), False), ("y_zero_point", zp(dt), False)],
                     ELEM[np.dtype(dt)], {"channels_last": last})

# QLinearAveragePool: windows, strides, pads, count_include_pad, ceil_mode, auto_pad, 1-D to 3-D,
# and a whole-plane kernel (onnxruntime's global path).
pools = [("k3p1", (1, 3, 8, 8), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
         ("k3p1_incl", (1, 3, 8, 8), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}),
         ("k2s2", (2, 4, 9, 7), {"kernel_shape": [2, 2], "strides": [2, 2]}),
         ("k3s2_ceil", (1, 2, 10, 9), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
         ("same_upper", (1, 2, 7, 6), {"kernel_shape": [3, 2], "strides": [2, 1], "auto_pad": "SAME_UPPER"}),
         ("asym_pads", (1, 3, 6, 6), {"kernel_shape": [2, 3], "pads": [0, 1, 1, 2]}),
         ("1d", (2, 3, 20), {"kernel_shape": [4], "strides": [3], "pads": [1, 2]}),
         ("3d", (1, 2, 5, 6, 4), {"kernel_shape": [2, 3, 2], "pads": [1, 0, 1, 0, 1, 1]}),
         ("whole", (2, 3, 5, 4), {"kernel_shape": [5, 4]})]
for dt, tag in TYPES:
    for last in (0, 1):
        for pname, shape, attrs in pools:
            x_shape = shape if not last else (shape[0], *shape[2:], shape[1])
            case(f"QLinearAveragePool_{tag}_last{last}_{pname}", "QLinearAveragePool",
                 [("X", ints(dt, *x_shape), True), ("x_scale", scalar(np.float32, 0.05), False),
                  ("x_zero_point", zp(dt), False), ("y_scale", scalar(np.float32, 0.03), False),
                  ("y_zero_point", zp(dt), False)],
                 ELEM[np.dtype(dt)], {**attrs, "channels_last": last})

# QLinearSoftmax: opset 12 (flattened tail) and 13 (one axis), axes, input scales; the output
# parameters onnxruntime's quantizer gives it (1/256 with zero point 0 or -128).
for dt, tag in TYPES:
    y_zero = scalar(dt, -128 if dt == np.int8 else 0)
    for opset in (12, 13):
        for axis in (-1, 1, 0):
            for xs in (0.05, 0.2):
                shape = (3, 4, 10)
                case(f"QLinearSoftmax_{tag}_opset{opset}_axis{axis}_xs{xs}", "QLinearSoftmax",
                     [("X", ints(dt, *shape), True), ("X_scale", scalar(np.float32, xs), False),
                      ("x_zero_point", zp(dt), False), ("y_scale", scalar(np.float32, 1.0 / 256), False),
                      ("y_zero_point", y_zero, False)],
                     ELEM[np.dtype(dt)], {"opset": opset, "axis": axis})

# QLinearWhere: broadcasts of the three inputs, X and Y with their own parameters or Z's.
where_shapes = [("same", (2, 3, 4), (2, 3, 4), (2, 3, 4)), ("cond_row", (4,), (2, 3, 4), (2, 3, 4)),
                ("x_scalar", (2, 3, 4), (), (3, 1)), ("mixed", (3, 1), (1, 5), (3, 5))]
for dt, tag in TYPES:
    for wname, cs, xsh, ysh in where_shapes:
        for same in (False, True):
            z_scale, z_zero = scalar(np.float32, 0.04), zp(dt)
            x_params = (z_scale, z_zero) if same else (scalar(np.float32, 0.03), zp(dt))
            y_params = (scalar(np.float32, 0.07), zp(dt))
            case(f"QLinearWhere_{tag}_{wname}{'_copy' if same else ''}", "QLinearWhere",
                 [("condition", rng.integers(0, 2, cs).astype(np.bool_), True), ("X", ints(dt, *xsh), True),
                  ("x_scale", x_params[0], False), ("x_zero_point", x_params[1], False),
                  ("Y", ints(dt, *ysh), True), ("y_scale", y_params[0], False), ("y_zero_point", y_params[1], False),
                  ("z_scale", z_scale, False), ("z_zero_point", z_zero, False)],
                 ELEM[np.dtype(dt)])

# QGemm: the A/B type pairs onnxruntime has kernels for, transposes, per-column B parameters,
# C of several shapes, alpha, requantized or float output.
for at, bt in ((np.uint8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)):
    for ta in (0, 1):
        for tb in (0, 1):
            for per_col in (False, True):
                for out in ("quant", "float"):
                    m, k, n = 5, 7, 6
                    a = ints(at, k, m) if ta else ints(at, m, k)
                    b = ints(bt, n, k) if tb else ints(bt, k, n)
                    b_scale = rng.uniform(0.01, 0.05, n).astype(np.float32) if per_col else scalar(np.float32, 0.03)
                    b_zero = ints(bt, n) if per_col else zp(bt)
                    c_shape = [(n,), (m, n), (m, 1), ()][(ta * 2 + tb) % 4]
                    c = rng.integers(-3000, 3000, c_shape).astype(np.int32) if (ta + tb + per_col) % 2 == 0 else None
                    quant = out == "quant"
                    name = (f"QGemm_{np.dtype(at).name}_{np.dtype(bt).name}_t{ta}{tb}_{'col' if per_col else 'tensor'}"
                            f"_{out}{'_c' + 'x'.join(map(str, c_shape)) if c is not None else ''}")
                    case(name, "QGemm",
                         [("A", a, True), ("a_scale", scalar(np.float32, 0.05), False), ("a_zero_point", zp(at), False),
                          ("B", b, True), ("b_scale", b_scale, False), ("b_zero_point", b_zero, False),
                          ("C", c, False), ("y_scale", scalar(np.float32, 0.5) if quant else None, False),
                          ("y_zero_point", zp(at) if quant else None, False)],
                         ELEM[np.dtype(at)] if quant else TensorProto.FLOAT,
                         {"transA": ta, "transB": tb, "alpha": 0.75 if per_col else 1.0})

# NhwcMaxPool: windows, strides, pads, dilations, ceil_mode, auto_pad, 1-D to 3-D.
max_pools = [("k3p1", (1, 8, 8, 3), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
             ("k2s2", (2, 9, 7, 4), {"kernel_shape": [2, 2], "strides": [2, 2]}),
             ("dil", (1, 9, 9, 2), {"kernel_shape": [2, 3], "dilations": [2, 2], "pads": [1, 1, 0, 1]}),
             ("ceil", (1, 10, 9, 2), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
             ("same_lower", (1, 7, 6, 3), {"kernel_shape": [3, 2], "strides": [2, 1], "auto_pad": "SAME_LOWER"}),
             ("1d", (2, 20, 3), {"kernel_shape": [4], "strides": [3], "pads": [1, 2]}),
             ("3d", (1, 5, 6, 4, 2), {"kernel_shape": [2, 3, 2], "pads": [1, 0, 1, 0, 1, 1]})]
for dt, tag in TYPES:
    for pname, shape, attrs in max_pools:
        case(f"NhwcMaxPool_{tag}_{pname}", "NhwcMaxPool", [("x", ints(dt, *shape), True)], ELEM[np.dtype(dt)], attrs)

jobs = [{"model": path, "inputs": files, "output_dir": os.path.join(os.path.dirname(path), "ort")}
        for _, _, path, files in cases]
for j in jobs:
    os.makedirs(j["output_dir"])
lines = ort_batch(ort_run, env, work, jobs, level="disabled")
failed = []
exact = 0
diff_elems = total_elems = 0
worst_step = 0
for (name, _, path, files), line in zip(cases, lines):
    mine_dir = os.path.join(os.path.dirname(path), "onnxtool")
    args = [a for n, f in files.items() for a in ("--input", f"{n}={f}")]
    r = subprocess.run([onnxtool, "run", path, *args, "--output-dir", mine_dir, "--quiet"], capture_output=True, text=True)
    if r.returncode:
        failed.append(name)
        print(f"FAIL {name}: onnxtool: {r.stderr.strip()}")
        continue
    ref_file = line["outputs"][0]["file"]
    ref = np.load(ref_file)
    # The shape function: the model with its output declared as onnxruntime's result must check
    # clean (a declaration the inferred shape contradicts is an error).
    declared = onnx.load(path)
    declared.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", ELEM[ref.dtype], list(ref.shape)))
    declared_path = os.path.join(os.path.dirname(path), "declared.onnx")
    onnx.save(declared, declared_path)
    r = subprocess.run([onnxtool, "check", declared_path], capture_output=True, text=True)
    if r.returncode or "0 errors, 0 warnings" not in r.stdout:
        failed.append(name)
        print(f"FAIL {name}: shape inference: {(r.stderr + r.stdout).strip()}")
        continue
    mine = np.load(os.path.join(mine_dir, os.path.basename(ref_file)))
    if mine.shape != ref.shape or mine.dtype != ref.dtype:
        failed.append(name)
        print(f"FAIL {name}: {mine.dtype}{list(mine.shape)} vs onnxruntime {ref.dtype}{list(ref.shape)}")
        continue
    total_elems += ref.size
    if ref.dtype.kind == "f":
        err = float(np.max(np.abs(ref.astype(np.float64) - mine) / (1e-30 + 1e-6 * np.abs(ref)))) if ref.size else 0.0
        if err > 1:
            failed.append(name)
            print(f"FAIL {name}: float output off by {err:.3g} x rtol 1e-6")
        else:
            exact += 1
            print(f"ok   {name} (float, error/rtol {err:.3g})")
        continue
    d = np.abs(ref.astype(np.int64) - mine.astype(np.int64))
    n_diff = int(np.count_nonzero(d))
    step = int(d.max()) if d.size else 0
    diff_elems += n_diff
    worst_step = max(worst_step, step)
    if n_diff == 0:
        exact += 1
        print(f"ok   {name} (exact, {ref.size} values)")
    else:
        failed.append(name)
        print(f"FAIL {name}: {n_diff} of {ref.size} values differ, up to {step} steps")
case_failures = len(failed)
# What onnxruntime has no kernel for is refused, naming the node and the reason.
refusals = [
    ("refuse_qgemm_i8_u8", "QGemm",
     [("A", ints(np.int8, 2, 3), True), ("a_scale", scalar(np.float32, 0.1), False), ("a_zero_point", zp(np.int8), False),
      ("B", ints(np.uint8, 3, 4), True), ("b_scale", scalar(np.float32, 0.1), False), ("b_zero_point", zp(np.uint8), False)],
     TensorProto.FLOAT, "int8 A needs int8 B"),
    ("refuse_add_per_channel", "QLinearAdd",
     [("A", ints(np.uint8, 2, 3), True), ("A_scale", np.full(3, 0.1, np.float32), False), ("A_zero_point", zp(np.uint8), False),
      ("B", ints(np.uint8, 2, 3), True), ("B_scale", scalar(np.float32, 0.1), False), ("B_zero_point", zp(np.uint8), False),
      ("C_scale", scalar(np.float32, 0.1), False), ("C_zero_point", zp(np.uint8), False)],
     TensorProto.UINT8, "A_scale float[3] must be one float32"),
]
for name, op, inputs, out_type, expect in refusals:
    path, files = write_model(name, op, inputs, out_type)
    args = [a for n, f in files.items() for a in ("--input", f"{n}={f}")]
    r = subprocess.run([onnxtool, "run", path, *args, "--quiet"], capture_output=True, text=True)
    if r.returncode == 1 and f"node 'q{name}' ({op}): {expect}" in r.stderr:
        print(f"ok   {name}: {r.stderr.strip()}")
    else:
        failed.append(name)
        print(f"FAIL {name}: exit {r.returncode}, {(r.stderr or r.stdout).strip()!r}")
print(f"{len(cases) - case_failures} of {len(cases)} quantized com.microsoft cases match onnxruntime "
      f"({exact} exactly); {diff_elems} of {total_elems} values differ, by at most {worst_step} step(s); "
      f"{len(refusals) - (len(failed) - case_failures)} of {len(refusals)} unsupported forms refused; {len(failed)} fail"
      f"{SAMPLE.note()}")
finish(failed)
