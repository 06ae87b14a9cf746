#!/usr/bin/python3
"""Builds the kept runtime-departure cases: small models where a runtime departs from the ONNX
spec, each in its own folder with its inputs (docs/runtime_departures.md describes them).

    make_cases.py OUT_DIR          writes the cases into OUT_DIR
    make_cases.py --check DIR      exit 1 unless the cases in DIR are what this script writes now

Cases (every folder: model.onnx, inputs/<input name>.npy):
 - ort_fp16_peak_picking: the 9 nodes of a tf2onnx detector's float16 tail, Sigmoid in float32,
   Cast to float16, MaxPool 3x3 pad 1 stride 1, Reshape of its output, Reshape of the Cast's
   output, Equal, Cast, Mul, Cast; workaround.onnx is the same model with the Reshape of
   MaxPool's output also a graph output, which makes onnxruntime 1.30 right.
 - ort_fp16_cast_rounding: its reduction to 2 nodes, Cast(x float32 -> float16) read by Equal
   against y, the float16 rounding of x: the spec gives true everywhere.
 - peak_picking_fp32: the float32 model the first case's tail came from (Sigmoid, MaxPool,
   Reshape, Reshape, Equal, Cast, Mul); inputs/ is the verification sample of `convert
   --to-fp16`, eval/ another input to judge the converted model on.

The inputs come from a fixed integer hash, so every run writes the same bytes (python3-onnx
serializes helper-built models deterministically). Peak-picking inputs are nudged so that no
sigmoid lies within 64 float32 ulps of a point halfway between two float16 values (any Sigmoid
within that of the exact one rounds to the same float16: the expected peaks do not depend on
whose Sigmoid ran), and so that float16 and float32 pick the same peaks.
"""
import filecmp
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

OPSET = 13  # what tf2onnx writes by default
SIDE = 64   # the departure shows at every size tried (1x2 to 160x160); 64x64 keeps the files small


def hashed_uniform(count, seed):
    """count floats uniform in [0, 1) from a splitmix64 hash of (seed, index)."""
    with np.errstate(over="ignore"):
        z = np.arange(count, dtype=np.uint64) + np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(40)).astype(np.float64) / float(1 << 24)


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


def near_half_midpoint(s, ulps):
    """True where float32 s lies within `ulps` float32 ulps of a midpoint between two float16s."""
    h16 = s.astype(np.float16)
    h = h16.astype(np.float64)
    below = np.nextafter(h16, np.float16(-np.inf)).astype(np.float64)
    above = np.nextafter(h16, np.float16(np.inf)).astype(np.float64)
    midpoints = np.stack([(h + below) / 2, (h + above) / 2])
    return (np.abs(midpoints - s).min(axis=0) <= ulps * np.spacing(s.astype(np.float32)).astype(np.float64))


def tied_in_half(s):
    """True where a float32 score shares its float16 rounding with a different score of its 3x3
    window: float16 would find a peak there that float32 does not, or the reverse."""
    grid = s.reshape(SIDE, SIDE)
    half = grid.astype(np.float16)
    tied = np.zeros(grid.shape, bool)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy or dx:
                other = np.roll(grid, (dy, dx), axis=(0, 1))
                tied |= (np.roll(half, (dy, dx), axis=(0, 1)) == half) & (other != grid)
    return tied.ravel()


def heat_logits(seed):
    """[1,1,SIDE,SIDE] logits in [-4, 4), nudged until no sigmoid is near a float16 rounding
    midpoint (see above) and no 3x3 window holds two scores float16 rounds together (the window
    wraps around here, which only nudges more): float16 and float32 then pick the same peaks, and
    the float16 model's right answer is the float32 one's."""
    x = (hashed_uniform(SIDE * SIDE, seed) * 8 - 4).astype(np.float32)
    for _ in range(100):
        s = sigmoid64(x).astype(np.float32)
        close = near_half_midpoint(s, 64) | tied_in_half(s)
        if not close.any():
            return x.reshape(1, 1, SIDE, SIDE)
        x[close] += np.float32(0.01)
    raise RuntimeError("could not move the logits away from float16 ties")


def model(nodes, inputs, outputs, initializers, name):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="onnxtool-runtime-departures")
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def peak_picking(half, extra_output=False):
    """Peak picking as CenterNet-style heads do it: a score survives where it equals the 3x3
    maximum around it. `half`: the tail after Sigmoid in float16 (the 9-node case)."""
    flat = [1, SIDE * SIDE]
    heat = "heat_half" if half else "heat"
    nodes = [helper.make_node("Sigmoid", ["logits"], ["heat"], name="sigmoid")]
    if half:
        nodes.append(helper.make_node("Cast", ["heat"], [heat], name="to_half", to=TensorProto.FLOAT16))
    nodes += [
        helper.make_node("MaxPool", [heat], ["pooled"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Reshape", ["pooled", "flat_shape"], ["pooled_flat"], name="flat_pooled"),
        helper.make_node("Reshape", [heat, "flat_shape"], ["heat_flat"], name="flat_heat"),
        helper.make_node("Equal", ["heat_flat", "pooled_flat"], ["is_peak"], name="is_peak"),
        helper.make_node("Cast", ["is_peak"], ["keep"], name="keep", to=TensorProto.FLOAT16 if half else TensorProto.FLOAT),
        helper.make_node("Mul", ["keep", "heat_flat"], ["scores_half" if half else "scores"], name="peaks"),
    ]
    if half:
        nodes.append(helper.make_node("Cast", ["scores_half"], ["scores"], name="to_float", to=TensorProto.FLOAT))
    elem = TensorProto.FLOAT16 if half else TensorProto.FLOAT
    outputs = [helper.make_tensor_value_info("scores", TensorProto.FLOAT, flat)]
    if extra_output:
        outputs.append(helper.make_tensor_value_info("pooled_flat", elem, flat))
    return model(nodes, [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1, SIDE, SIDE])], outputs,
                 [helper.make_tensor("flat_shape", TensorProto.INT64, [2], flat)], "peak_picking")


def cast_rounding():
    n = 16
    nodes = [helper.make_node("Cast", ["x"], ["x_half"], name="to_half", to=TensorProto.FLOAT16),
             helper.make_node("Equal", ["x_half", "y"], ["same"], name="same")]
    return model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n]),
                         helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, n])],
                 [helper.make_tensor_value_info("same", TensorProto.BOOL, [1, n])], [], "cast_rounding")


def cast_rounding_inputs():
    x = (hashed_uniform(16, 7) * 4 - 2).astype(np.float32)
    x[0] = 0.5  # a float16 already: the one element where rounding changes nothing
    return {"x": x.reshape(1, -1), "y": x.astype(np.float16).reshape(1, -1)}


def write_case(out, name, models, inputs, extra_inputs=None):
    folder = os.path.join(out, name)
    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    for file, m in models.items():
        onnx.save(m, os.path.join(folder, file))
    for sub, feeds in [("inputs", inputs)] + ([("eval", extra_inputs)] if extra_inputs else []):
        os.makedirs(os.path.join(folder, sub), exist_ok=True)
        for k, v in feeds.items():
            np.save(os.path.join(folder, sub, k + ".npy"), v)


def write_all(out):
    write_case(out, "ort_fp16_peak_picking", {"model.onnx": peak_picking(True), "workaround.onnx": peak_picking(True, True)},
               {"logits": heat_logits(1)})
    write_case(out, "ort_fp16_cast_rounding", {"model.onnx": cast_rounding()}, cast_rounding_inputs())
    write_case(out, "peak_picking_fp32", {"model.onnx": peak_picking(False)}, {"logits": heat_logits(2)},
               {"logits": heat_logits(3)})


def same_tree(a, b):
    c = filecmp.dircmp(a, b)
    if c.left_only or c.right_only or c.diff_files or c.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, c.common_files, shallow=False)
    return not mismatch and not errors and all(same_tree(os.path.join(a, d), os.path.join(b, d)) for d in c.common_dirs)


def main(argv):
    if len(argv) == 3 and argv[1] == "--check":
        fresh = tempfile.mkdtemp(prefix="runtime_departures.")
        try:
            write_all(fresh)
            ours = {d for d in os.listdir(argv[2]) if os.path.isdir(os.path.join(argv[2], d))}
            if ours != set(os.listdir(fresh)) or not all(same_tree(os.path.join(argv[2], d), os.path.join(fresh, d)) for d in ours):
                print(f"make_cases.py: the cases in {argv[2]} differ from what this script writes; rerun it", file=sys.stderr)
                return 1
            return 0
        finally:
            shutil.rmtree(fresh)
    if len(argv) != 2 or argv[1].startswith("-"):
        print("usage: make_cases.py OUT_DIR | --check DIR", file=sys.stderr)
        return 2
    write_all(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
