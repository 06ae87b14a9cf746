#!/usr/bin/python3
"""Single-op ONNX models for the op-level speed sweep (bench/op_speed.sh), one input set each.

    bench/make_op_models.py FOLDER

Every configuration is one model (one node, or the few nodes an exporter writes for one
activation: Gelu, SiLU) in the attribute and shape combinations that PyTorch, tf2onnx and
Paddle2ONNX exports carry, most of them on a small and on a large tensor: pooling, convolution,
Gemm and MatMul, Resize, reductions and softmax, Transpose, broadcasting binary ops, unary
activations, data movement (Pad, Concat, Split, Slice, Gather, Where, Expand, Tile,
DepthToSpace), Cast, normalizations, LSTM and GRU, ArgMax, TopK and CumSum. Opset 13 unless
the op needs newer (HardSwish 14, LayerNormalization 17), IR version 8. Constant operands
(weights, shapes, axes, pads, scales) are initializers, so that nothing folds away; the data
operands are graph inputs with a seeded random .npy file each (the seed comes from the
configuration id, so adding a configuration changes no other one's data).

FOLDER gets <id>.onnx, <id>.<input>.npy and manifest.tsv, rebuilt only when this script changed
(a stamp, as bench/make_bench_inputs.py does). Prints the manifest with absolute paths, one line
per configuration: ID<TAB>MODEL<TAB>NAME=FILE[ NAME=FILE...]<TAB>DESCRIPTION.
"""
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import make_real_inputs as real  # noqa: E402  (build_cached: the stamped cache folder)

SCRIPT = os.path.abspath(__file__)
OPSET = 13
F32 = np.float32
I64 = np.int64


def shape_text(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


class Sweep:
    """Collects the configurations and writes each one's model and inputs into a folder."""

    def __init__(self, folder):
        self.folder = folder
        self.rows = []
        self.counts = {}

    def rng(self, cid):
        return np.random.default_rng(zlib.crc32(cid.encode()))

    def add(self, family, desc, nodes, inputs, consts=None, outputs=("y",), opset=OPSET):
        """nodes: [NodeProto]; inputs: [(name, array)], the graph inputs, saved as .npy;
        consts: [(name, array)], the initializers; outputs: the graph outputs' names, their types
        and shapes inferred."""
        n = self.counts.get(family, 0) + 1
        self.counts[family] = n
        cid = f"{family}-{n:03d}"
        graph = helper.make_graph(
            nodes, cid,
            [helper.make_tensor_value_info(name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(a.dtype)], a.shape)
             for name, a in inputs],
            [onnx.ValueInfoProto(name=o) for o in outputs],
            [numpy_helper.from_array(np.asarray(a), name) for name, a in (consts or [])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="bench/make_op_models.py")
        model.ir_version = 8
        inferred = shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        typed = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
        for out in model.graph.output:
            known = typed.get(out.name)
            if known is None or not known.type.HasField("tensor_type"):
                raise SystemExit(f"{cid} ({desc}): no type inferred for output {out.name}")
            out.type.CopyFrom(known.type)
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(self.folder, cid + ".onnx"))
        files = []
        for name, a in inputs:
            f = f"{cid}.{name}.npy"
            np.save(os.path.join(self.folder, f), a)
            files.append(f"{name}={f}")
        self.rows.append((cid, cid + ".onnx", " ".join(files), desc))
        return cid

    # --- data
    def normal(self, shape, scale=1.0, dtype=F32, key=""):
        r = self.rng(f"{len(self.rows)}/{key}/{shape}")
        return (r.standard_normal(shape) * scale).astype(dtype)

    def uniform(self, shape, lo, hi, key=""):
        r = self.rng(f"{len(self.rows)}/{key}/{shape}")
        return r.uniform(lo, hi, shape).astype(F32)


def node(op, ins, outs=("y",), **attrs):
    return helper.make_node(op, list(ins), list(outs), **attrs)


# ---------------------------------------------------------------- pooling
def pools(s):
    # (kernel, stride, pad) pairs seen in exports: ResNet's 3/2/1, VGG's 2/2/0, SPP's 5/1/2,
    # Inception's 3/1/1, Caffe-style ceil_mode, global-like 7/1/0.
    pairs2d = [(2, 2, 0), (2, 1, 0), (2, 2, 1), (3, 1, 1), (3, 2, 1), (3, 2, 0), (3, 1, 0),
               (5, 1, 2), (5, 2, 2), (7, 1, 3), (7, 2, 3), (7, 1, 0)]
    small, large = [1, 32, 28, 28], [1, 64, 112, 112]
    for op in ("MaxPool", "AveragePool"):
        fam = "maxpool" if op == "MaxPool" else "avgpool"
        for k, st, p in pairs2d:
            ceils = (0, 1) if st > 1 else (0,)
            cips = (0, 1) if op == "AveragePool" and p > 0 else (0,)
            for ceil in ceils:
                for cip in cips:
                    for size in ((small, large) if ceil == 0 else (large,)):
                        if size is large and k >= 5 and st == 1:
                            size = [1, 64, 56, 56]  # keep onnxruntime's run near a few ms
                        attrs = dict(kernel_shape=[k, k], strides=[st, st], pads=[p] * 4, ceil_mode=ceil)
                        d = f"{op} k{k} s{st} p{p} ceil{ceil}"
                        if op == "AveragePool":
                            attrs["count_include_pad"] = cip
                            d += f" cip{cip}"
                        x = s.normal(size)
                        s.add(fam, f"{d} {shape_text(size)}", [node(op, ["x"], **attrs)], [("x", x)])
        # 1-D (audio, text CNNs)
        for k, st, p, ceil in [(2, 2, 0, 0), (3, 1, 1, 0), (3, 2, 1, 0), (3, 2, 1, 1), (5, 1, 2, 0)]:
            for size in ([1, 64, 256], [4, 128, 1024]):
                attrs = dict(kernel_shape=[k], strides=[st], pads=[p, p], ceil_mode=ceil)
                d = f"{op} 1-D k{k} s{st} p{p} ceil{ceil}"
                if op == "AveragePool":
                    attrs["count_include_pad"] = 0
                    d += " cip0"
                s.add(fam, f"{d} {shape_text(size)}", [node(op, ["x"], **attrs)], [("x", s.normal(size))])
        # 3-D (video, volumetric)
        for k, st, p in [(2, 2, 0), (3, 2, 1), (3, 1, 1)]:
            size = [1, 16, 16, 56, 56]
            attrs = dict(kernel_shape=[k] * 3, strides=[st] * 3, pads=[p] * 6)
            d = f"{op} 3-D k{k} s{st} p{p}"
            if op == "AveragePool":
                attrs["count_include_pad"] = 1
                d += " cip1"
            s.add(fam, f"{d} {shape_text(size)}", [node(op, ["x"], **attrs)], [("x", s.normal(size))])
    for op in ("GlobalAveragePool", "GlobalMaxPool"):
        for size in ([1, 512, 7, 7], [1, 256, 56, 56], [8, 2048, 7, 7], [1, 128, 1024], [1, 32, 8, 28, 28]):
            s.add("globalpool", f"{op} {shape_text(size)}", [node(op, ["x"])], [("x", s.normal(size))])


# ---------------------------------------------------------------- convolution
def convs(s):
    # (spatial input, Cin, Cout, kernel, stride, pad, dilation, groups, bias, note)
    table = [
        # 2-D, groups 1
        ([56, 56], 64, 64, 1, 1, 0, 1, 1, True, "pointwise"),
        ([28, 28], 128, 256, 1, 1, 0, 1, 1, True, "pointwise"),
        ([14, 14], 256, 64, 1, 1, 0, 1, 1, False, "pointwise"),
        ([112, 112], 32, 16, 1, 1, 0, 1, 1, True, "pointwise"),
        ([56, 56], 64, 128, 1, 2, 0, 1, 1, False, "projection"),
        ([28, 28], 32, 32, 3, 1, 1, 1, 1, True, ""),
        ([56, 56], 64, 64, 3, 1, 1, 1, 1, True, ""),
        ([14, 14], 256, 256, 3, 1, 1, 1, 1, True, ""),
        ([7, 7], 512, 512, 3, 1, 1, 1, 1, False, ""),
        ([224, 224], 3, 32, 3, 2, 1, 1, 1, True, "stem"),
        ([56, 56], 64, 128, 3, 2, 1, 1, 1, True, ""),
        ([28, 28], 32, 32, 3, 1, 0, 1, 1, True, "valid"),
        ([28, 28], 32, 32, 5, 1, 2, 1, 1, True, ""),
        ([56, 56], 16, 32, 5, 2, 2, 1, 1, True, ""),
        ([224, 224], 3, 64, 7, 2, 3, 1, 1, False, "stem"),
        ([28, 28], 32, 32, 7, 1, 3, 1, 1, True, ""),
        ([16, 16], 8, 8, 3, 1, 1, 1, 1, True, "tiny"),
        # dilations
        ([28, 28], 64, 64, 3, 1, 2, 2, 1, True, "dilated"),
        ([56, 56], 32, 32, 3, 1, 2, 2, 1, True, "dilated"),
        ([32, 32], 64, 64, 3, 1, 4, 4, 1, True, "dilated (ASPP)"),
        # depthwise
        ([112, 112], 32, 32, 3, 1, 1, 1, 32, True, "depthwise"),
        ([112, 112], 64, 64, 3, 2, 1, 1, 64, True, "depthwise"),
        ([14, 14], 256, 256, 3, 1, 1, 1, 256, True, "depthwise"),
        ([28, 28], 144, 144, 5, 1, 2, 1, 144, True, "depthwise"),
        ([28, 28], 144, 144, 5, 2, 2, 1, 144, True, "depthwise"),
        ([56, 56], 96, 96, 7, 1, 3, 1, 96, True, "depthwise (ConvNeXt)"),
        ([28, 28], 64, 64, 3, 1, 2, 2, 64, True, "depthwise dilated"),
        ([16, 16], 32, 32, 3, 1, 1, 1, 32, True, "depthwise tiny"),
        # grouped
        ([28, 28], 64, 64, 3, 1, 1, 1, 2, True, "grouped"),
        ([28, 28], 128, 128, 3, 1, 1, 1, 4, True, "grouped"),
        ([56, 56], 64, 64, 3, 2, 1, 1, 4, True, "grouped"),
        ([28, 28], 128, 256, 1, 1, 0, 1, 4, True, "grouped pointwise"),
        ([56, 56], 128, 128, 3, 1, 1, 1, 32, True, "grouped (ResNeXt 32x4d)"),
        # 1-D
        ([256], 64, 64, 3, 1, 1, 1, 1, True, ""),
        ([1000], 80, 256, 3, 1, 1, 1, 1, True, "speech front end"),
        ([512], 128, 128, 5, 2, 2, 1, 1, True, ""),
        ([512], 128, 128, 1, 1, 0, 1, 1, True, "pointwise"),
        ([256], 256, 256, 31, 1, 15, 1, 256, True, "depthwise (Conformer)"),
        ([512], 64, 64, 3, 1, 2, 2, 1, True, "dilated (TCN)"),
        ([512], 128, 128, 3, 1, 1, 1, 4, True, "grouped"),
        ([16000], 1, 64, 7, 2, 3, 1, 1, True, "waveform"),
        # 3-D
        ([8, 28, 28], 16, 16, 3, 1, 1, 1, 1, True, ""),
        ([8, 28, 28], 32, 64, 1, 1, 0, 1, 1, True, "pointwise"),
        ([16, 56, 56], 3, 16, 3, 2, 1, 1, 1, True, "stem"),
        ([8, 28, 28], 32, 32, 3, 1, 1, 1, 32, True, "depthwise"),
        ([8, 16, 16], 16, 16, 5, 1, 2, 1, 1, False, ""),
    ]
    for spatial, cin, cout, k, st, p, dil, g, bias, note in table:
        nd = len(spatial)
        xs = [1, cin] + spatial
        w = s.normal([cout, cin // g] + [k] * nd, scale=1.0 / np.sqrt(cin // g * k ** nd), key="w")
        consts = [("w", w)]
        ins = ["x", "w"]
        if bias:
            consts.append(("b", s.normal([cout], 0.1, key="b")))
            ins.append("b")
        attrs = dict(kernel_shape=[k] * nd, strides=[st] * nd, pads=[p] * (2 * nd), dilations=[dil] * nd, group=g)
        d = (f"Conv {nd}-D {note + ' ' if note else ''}k{k} s{st} p{p} d{dil} g{g} {cin}->{cout}"
             f"{' bias' if bias else ''} {shape_text(xs)}")
        s.add("conv", d, [node("Conv", ins, **attrs)], [("x", s.normal(xs))], consts)
    # ConvTranspose: decoder upsampling (stride 2)
    for spatial, cin, cout, k, p, op, g in [
            ([28, 28], 64, 32, 2, 0, 0, 1), ([56, 56], 32, 16, 2, 0, 0, 1),
            ([28, 28], 64, 32, 3, 1, 1, 1), ([14, 14], 128, 64, 3, 1, 1, 1),
            ([28, 28], 64, 32, 4, 1, 0, 1), ([14, 14], 256, 128, 4, 1, 0, 1),
            ([28, 28], 64, 64, 4, 1, 0, 64), ([56, 56], 32, 32, 4, 1, 0, 32),
            ([28, 28], 64, 64, 3, 1, 1, 64), ([8, 8], 16, 16, 2, 0, 0, 1),
            ([256], 128, 64, 4, 1, 0, 1), ([8, 14, 14], 32, 16, 2, 0, 0, 1)]:
        nd = len(spatial)
        xs = [1, cin] + spatial
        w = s.normal([cin, cout // g] + [k] * nd, scale=1.0 / np.sqrt(cin * k ** nd / 4), key="w")
        attrs = dict(kernel_shape=[k] * nd, strides=[2] * nd, pads=[p] * (2 * nd), group=g)
        if op:
            attrs["output_padding"] = [op] * nd
        d = f"ConvTranspose {nd}-D k{k} s2 p{p} op{op} g{g} {cin}->{cout} bias {shape_text(xs)}"
        s.add("convtranspose", d, [node("ConvTranspose", ["x", "w", "b"], **attrs)], [("x", s.normal(xs))],
              [("w", w), ("b", s.normal([cout], 0.1, key="b"))])


# ---------------------------------------------------------------- Gemm and MatMul
def matmuls(s):
    for m, k, n in [(64, 256, 256), (1, 512, 1000), (128, 768, 768), (8, 64, 64)]:
        for ta in (0, 1):
            for tb in (0, 1):
                for bias in (True, False):
                    if (m, k, n) != (64, 256, 256) and (ta or not bias):
                        continue  # the other sizes: the exporters' transA=0 with bias only
                    a = s.normal([k, m] if ta else [m, k])
                    b = s.normal([n, k] if tb else [k, n], 1.0 / np.sqrt(k), key="b")
                    consts = [("b", b)]
                    ins = ["a", "b"]
                    if bias:
                        consts.append(("c", s.normal([n], 0.1, key="c")))
                        ins.append("c")
                    d = f"Gemm transA{ta} transB{tb}{' bias' if bias else ''} M{m} K{k} N{n}"
                    s.add("gemm", d, [node("Gemm", ins, transA=ta, transB=tb)], [("a", a)], consts)
    # MatMul: weight as an initializer (linear layers), or both operands inputs (attention)
    for ashape, bshape, both in [
            ([128, 256], [256, 256], False), ([1, 768], [768, 3072], False), ([16, 64], [64, 64], False),
            ([1, 128, 768], [768, 768], False), ([4, 64, 512], [512, 512], False), ([8, 10, 64], [64, 32], False),
            ([8, 64, 64], [8, 64, 64], True), ([12, 128, 64], [12, 64, 128], True),
            ([1, 12, 128, 64], [1, 12, 64, 128], True), ([1, 12, 128, 128], [1, 12, 128, 64], True),
            ([2, 4, 32, 32], [2, 4, 32, 32], True),
            ([1, 128, 256], [4, 256, 64], True), ([1, 64, 64], [16, 64, 64], True),
            ([4, 1, 64, 64], [1, 8, 64, 64], True), ([4, 128, 256], [256, 128], True),
            ([256, 512], [512, 128], True)]:
        a = s.normal(ashape)
        b = s.normal(bshape, 1.0 / np.sqrt(ashape[-1]), key="b")
        what = "x inputs" if both else "x weight"
        d = f"MatMul {shape_text(ashape)} x {shape_text(bshape)} ({what})"
        if both:
            s.add("matmul", d, [node("MatMul", ["a", "b"])], [("a", a), ("b", b)])
        else:
            s.add("matmul", d, [node("MatMul", ["a", "b"])], [("a", a)], [("b", b)])


# ---------------------------------------------------------------- Resize
def resizes(s):
    nearest = [("asymmetric", "floor"), ("half_pixel", "round_prefer_floor"), ("align_corners", "round_prefer_floor"),
               ("half_pixel", "round_prefer_ceil"), ("pytorch_half_pixel", "floor"),
               ("asymmetric", "round_prefer_ceil")]
    modes = [("nearest", ctm, nm) for ctm, nm in nearest]
    modes += [("linear", ctm, None) for ctm in ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")]
    modes += [("cubic", "half_pixel", None), ("cubic", "align_corners", None)]
    for mode, ctm, nm in modes:
        for scale, size in [(2.0, [1, 32, 28, 28]), (2.0, [1, 64, 56, 56]), (0.5, [1, 32, 56, 56])]:
            if mode == "cubic" and size[2] == 56 and scale == 2.0:
                size = [1, 16, 40, 40]  # onnxruntime's cubic takes ~0.1 µs an output: a smaller large case
            attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
            d = f"Resize {mode} {ctm}"
            if nm:
                attrs["nearest_mode"] = nm
                d += f" {nm}"
            if mode == "cubic":
                attrs["cubic_coeff_a"] = -0.75
                d += " a-0.75"
            d += f" x{scale:g} {shape_text(size)}"
            consts = [("roi", np.zeros([0], F32)), ("scales", np.array([1, 1, scale, scale], F32))]
            s.add("resize", d, [node("Resize", ["x", "roi", "scales"], **attrs)], [("x", s.normal(size))], consts)
    # sizes instead of scales (PyTorch's interpolate(size=...)), non-integer factor
    for mode, ctm, nm in [("nearest", "asymmetric", "floor"), ("linear", "half_pixel", None),
                          ("linear", "align_corners", None)]:
        size, out = [1, 32, 40, 40], [1, 32, 64, 64]
        attrs = dict(mode=mode, coordinate_transformation_mode=ctm)
        if nm:
            attrs["nearest_mode"] = nm
        consts = [("roi", np.zeros([0], F32)), ("scales", np.zeros([0], F32)), ("sizes", np.array(out, I64))]
        s.add("resize", f"Resize {mode} {ctm} sizes {shape_text(size)}->{shape_text(out)}",
              [node("Resize", ["x", "roi", "scales", "sizes"], **attrs)], [("x", s.normal(size))], consts)


# ---------------------------------------------------------------- reductions and softmax
def reductions(s):
    large, small = [4, 64, 32, 32], [1, 32, 16, 16]
    axis_sets = [[0], [1], [2], [3], [2, 3], [1, 2, 3]]
    for op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceL2"):
        cases = [(large, a, 1) for a in axis_sets]
        cases += [(large, [3], 0), (large, [2, 3], 0), (small, [3], 1), (small, [1], 1), (small, [2, 3], 0)]
        for size, axes, keep in cases:
            d = f"{op} axes{shape_text(axes)} keepdims{keep} {shape_text(size)}"
            if op == "ReduceSum":  # axes became an input in opset 13
                s.add("reduce", d, [node(op, ["x", "axes"], keepdims=keep)], [("x", s.normal(size))],
                      [("axes", np.array(axes, I64))])
            else:
                s.add("reduce", d, [node(op, ["x"], axes=axes, keepdims=keep)], [("x", s.normal(size))])
    for op in ("Softmax", "LogSoftmax"):
        for size in ([8, 12, 64, 64], [4, 8, 64]):
            for axis, where in [(-1, "last"), (len(size) // 2, "middle"), (0, "first")]:
                s.add("softmax", f"{op} axis{axis} ({where}) {shape_text(size)}", [node(op, ["x"], axis=axis)],
                      [("x", s.normal(size, 3.0))])
    # the attention softmax: [B, heads, T, T] at a long sequence
    s.add("softmax", "Softmax axis-1 (last) [1,12,256,256]", [node("Softmax", ["x"], axis=-1)],
          [("x", s.normal([1, 12, 256, 256], 3.0))])


# ---------------------------------------------------------------- Transpose
def transposes(s):
    cases = [
        ([1, 64, 56, 56], [0, 2, 3, 1], "NCHW->NHWC"), ([1, 56, 56, 64], [0, 3, 1, 2], "NHWC->NCHW"),
        ([1, 16, 14, 14], [0, 2, 3, 1], "NCHW->NHWC"), ([1, 14, 14, 16], [0, 3, 1, 2], "NHWC->NCHW"),
        ([1, 128, 12, 64], [0, 2, 1, 3], "heads split"), ([1, 12, 128, 64], [0, 2, 1, 3], "heads merge"),
        ([1, 12, 128, 64], [0, 1, 3, 2], "K transpose"), ([1, 16, 8, 32], [0, 2, 1, 3], "heads small"),
        ([1, 3, 80, 80], [0, 2, 3, 1], "NCHW->NHWC 3 channels"),
        ([512, 1024], [1, 0], "2-D"), ([64, 64], [1, 0], "2-D small"), ([1000, 3], [1, 0], "2-D narrow"),
        ([16, 128, 64], [0, 2, 1], "3-D last two"), ([128, 16, 64], [1, 0, 2], "3-D first two"),
        ([1, 2, 58, 28, 28], [0, 2, 1, 3, 4], "5-D channel shuffle"),
        ([1, 3, 85, 20, 20], [0, 1, 3, 4, 2], "5-D YOLO head"),
        ([1, 16, 2, 2, 56, 56], [0, 1, 4, 2, 5, 3], "6-D pixel shuffle"),
        ([1, 64, 56, 56], [1, 0, 2, 3], "N<->C"), ([1, 64, 56, 56], [0, 1, 3, 2], "H<->W"),
    ]
    for size, perm, note in cases:
        s.add("transpose", f"Transpose perm{shape_text(perm)} ({note}) {shape_text(size)}",
              [node("Transpose", ["x"], perm=perm)], [("x", s.normal(size))])


# ---------------------------------------------------------------- elementwise
def binaries(s):
    for n, c, h, w in [(1, 64, 128, 128), (1, 16, 16, 16)]:
        full = [n, c, h, w]
        patterns = [
            ("same shape", full, True), ("scalar", [], False), ("per-channel", [c, 1, 1], False),
            ("row", [w], False), ("column", [h, 1], False),
            ("[N,1,H,W] x [N,C,1,1]", None, True),
        ]
        for op in ("Add", "Mul", "Sub", "Div"):
            for note, bshape, both in patterns:
                if bshape is None:
                    a = s.normal([n, 1, h, w])
                    b = s.normal([n, c, 1, 1])
                    if op == "Div":
                        b = np.abs(b) + 0.5
                    d = f"{op} [N,1,H,W] {shape_text(a.shape)} with [N,C,1,1] {shape_text(b.shape)}"
                    s.add("binary", d, [node(op, ["a", "b"])], [("a", a), ("b", b)])
                    continue
                a = s.normal(full)
                b = s.normal(bshape, key="b")
                if op == "Div":
                    b = (np.abs(b) + 0.5).astype(F32)
                d = f"{op} {note} {shape_text(full)} with {shape_text(bshape)}"
                if both:
                    s.add("binary", d, [node(op, ["a", "b"])], [("a", a), ("b", b)])
                else:
                    s.add("binary", d, [node(op, ["a", "b"])], [("a", a)], [("b", b)])
        a = s.normal(full)
        s.add("binary", f"Pow exponent 2 {shape_text(full)}", [node("Pow", ["a", "e"])], [("a", a)],
              [("e", np.array(2.0, F32))])
        s.add("binary", f"Pow exponent 0.5 {shape_text(full)}", [node("Pow", ["a", "e"])], [("a", np.abs(a) + 0.1)],
              [("e", np.array(0.5, F32))])
        s.add("binary", f"PRelu per-channel slope {shape_text(full)}", [node("PRelu", ["a", "slope"])], [("a", a)],
              [("slope", s.uniform([c, 1, 1], 0.0, 0.3, key="slope"))])
        s.add("binary", f"Max same shape {shape_text(full)}", [node("Max", ["a", "b"])],
              [("a", a), ("b", s.normal(full, key="b"))])
        s.add("binary", f"Min with scalar {shape_text(full)}", [node("Min", ["a", "b"])], [("a", a)],
              [("b", np.array(0.25, F32))])
        s.add("binary", f"Greater same shape (bool out) {shape_text(full)}", [node("Greater", ["a", "b"])],
              [("a", a), ("b", s.normal(full, key="b"))])
        s.add("binary", f"Equal int64 with scalar {shape_text(full)}", [node("Equal", ["a", "b"])],
              [("a", s.rng(f"eq{full}").integers(0, 4, full).astype(I64))], [("b", np.array(1, I64))])


def unaries(s):
    plain = ["Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Erf", "Abs", "Neg", "Reciprocal", "Floor",
             "Ceil", "Round", "Sin", "Cos", "Tan", "Atan", "Sign", "Softplus", "Softsign", "Identity"]
    positive = {"Log", "Sqrt", "Reciprocal"}
    with_attrs = [("LeakyRelu", dict(alpha=0.01)), ("LeakyRelu", dict(alpha=0.2)), ("Elu", dict(alpha=1.0)),
                  ("Selu", {}), ("Celu", dict(alpha=1.0)), ("HardSigmoid", dict(alpha=1.0 / 6, beta=0.5)),
                  ("ThresholdedRelu", dict(alpha=1.0))]
    for size in ([1, 16, 16, 16], [1, 64, 128, 128]):
        count = int(np.prod(size))
        label = f"{shape_text(size)} ({count:,})"
        for op in plain:
            x = s.normal(size, 2.0)
            if op in positive:
                x = (np.abs(x) + 0.05).astype(F32)
            s.add("unary", f"{op} {label}", [node(op, ["x"])], [("x", x)])
        for op, attrs in with_attrs:
            extra = " ".join(f"{k}={v:g}" for k, v in attrs.items())
            s.add("unary", f"{op} {extra + ' ' if extra else ''}{label}", [node(op, ["x"], **attrs)],
                  [("x", s.normal(size, 2.0))])
        s.add("unary", f"HardSwish {label}", [node("HardSwish", ["x"])], [("x", s.normal(size, 3.0))], opset=14)
        s.add("unary", f"Clip 0..6 (Relu6) {label}", [node("Clip", ["x", "lo", "hi"])], [("x", s.normal(size, 4.0))],
              [("lo", np.array(0, F32)), ("hi", np.array(6, F32))])
        s.add("unary", f"Clip -1..1 {label}", [node("Clip", ["x", "lo", "hi"])], [("x", s.normal(size, 2.0))],
              [("lo", np.array(-1, F32)), ("hi", np.array(1, F32))])
        s.add("unary", f"Not (bool) {label}", [node("Not", ["x"])], [("x", s.normal(size) > 0)])
        # the multi-node activations exporters write (onnxruntime fuses them at level all)
        x = s.normal(size, 2.0)
        s.add("unary", f"Gelu as Div,Erf,Add,Mul,Mul (erf form) {label}",
              [node("Div", ["x", "sqrt2"], ["t0"]), node("Erf", ["t0"], ["t1"]), node("Add", ["t1", "one"], ["t2"]),
               node("Mul", ["x", "t2"], ["t3"]), node("Mul", ["t3", "half"])],
              [("x", x)], [("sqrt2", np.array(np.sqrt(2), F32)), ("one", np.array(1, F32)), ("half", np.array(0.5, F32))])
        s.add("unary", f"Gelu as Pow,Mul,Add,Mul,Tanh,Add,Mul,Mul (tanh form) {label}",
              [node("Pow", ["x", "three"], ["t0"]), node("Mul", ["t0", "c"], ["t1"]), node("Add", ["x", "t1"], ["t2"]),
               node("Mul", ["t2", "k"], ["t3"]), node("Tanh", ["t3"], ["t4"]), node("Add", ["t4", "one"], ["t5"]),
               node("Mul", ["x", "t5"], ["t6"]), node("Mul", ["t6", "half"])],
              [("x", x)], [("three", np.array(3, F32)), ("c", np.array(0.044715, F32)),
                           ("k", np.array(np.sqrt(2 / np.pi), F32)), ("one", np.array(1, F32)),
                           ("half", np.array(0.5, F32))])
        s.add("unary", f"SiLU as Sigmoid,Mul {label}", [node("Sigmoid", ["x"], ["t0"]), node("Mul", ["x", "t0"])],
              [("x", x)])


# ---------------------------------------------------------------- data movement
def movement(s):
    # Pad
    for size in ([1, 32, 56, 56], [1, 16, 16, 16]):
        for mode in ("constant", "reflect", "edge"):
            pads = [0, 0, 1, 1, 0, 0, 1, 1]
            consts = [("pads", np.array(pads, I64))]
            ins = ["x", "pads"]
            if mode == "constant":
                consts.append(("value", np.array(0, F32)))
                ins.append("value")
            s.add("pad", f"Pad {mode} 1 on H,W {shape_text(size)}", [node("Pad", ins, mode=mode)],
                  [("x", s.normal(size))], consts)
    s.add("pad", "Pad constant [0,0,0,0,0,0,1,1] (TF SAME, bottom-right) [1,64,112,112]",
          [node("Pad", ["x", "pads"], mode="constant")], [("x", s.normal([1, 64, 112, 112]))],
          [("pads", np.array([0, 0, 0, 0, 0, 0, 1, 1], I64))])
    s.add("pad", "Pad reflect 3 on H,W (style transfer) [1,32,128,128]", [node("Pad", ["x", "pads"], mode="reflect")],
          [("x", s.normal([1, 32, 128, 128]))], [("pads", np.array([0, 0, 3, 3, 0, 0, 3, 3], I64))])
    s.add("pad", "Pad constant 2 on T (1-D) [4,128,1000]", [node("Pad", ["x", "pads"], mode="constant")],
          [("x", s.normal([4, 128, 1000]))], [("pads", np.array([0, 0, 2, 0, 0, 2], I64))])
    # Concat
    for axis in range(4):
        for base in ([1, 64, 56, 56], [1, 16, 8, 8]):
            a = s.normal(base)
            bshape = list(base)
            bshape[axis] = bshape[axis] // 2 if axis else 2
            b = s.normal(bshape, key="b")
            s.add("concat", f"Concat axis{axis} {shape_text(base)} + {shape_text(bshape)}",
                  [node("Concat", ["a", "b"], axis=axis)], [("a", a), ("b", b)])
    parts = [s.normal([1, 128, 20, 20], key=str(i)) for i in range(4)]
    s.add("concat", "Concat axis1 4 x [1,128,20,20] (SPPF)", [node("Concat", ["a", "b", "c", "d"], axis=1)],
          list(zip("abcd", parts)))
    s.add("concat", "Concat axis1 [1,1,768] + [1,196,768] (ViT class token)",
          [node("Concat", ["a", "b"], axis=1)], [("a", s.normal([1, 1, 768])), ("b", s.normal([1, 196, 768], key="b"))])
    # Split (opset 13: split sizes as an input)
    base = [1, 64, 56, 56]
    for axis in range(4):
        n = base[axis] if axis == 0 else base[axis]
        size = [2, 64, 56, 56] if axis == 0 else base
        n = size[axis]
        for sizes, how in [([n // 2, n // 2], "equal"), ([n // 4, n - n // 4], "unequal")]:
            s.add("split", f"Split axis{axis} {how} {sizes} {shape_text(size)}",
                  [node("Split", ["x", "split"], ["y0", "y1"], axis=axis)], [("x", s.normal(size))],
                  [("split", np.array(sizes, I64))], outputs=("y0", "y1"))
    s.add("split", "Split axis-1 equal 3 ways (QKV) [1,128,2304]", [node("Split", ["x"], ["q", "k", "v"], axis=-1)],
          [("x", s.normal([1, 128, 2304]))], outputs=("q", "k", "v"))
    s.add("split", "Split axis1 equal [1,16,16,16] small", [node("Split", ["x"], ["y0", "y1"], axis=1)],
          [("x", s.normal([1, 16, 16, 16]))], outputs=("y0", "y1"))
    # Slice
    big = 2 ** 62
    for size, starts, ends, axes, steps, note in [
            ([1, 64, 56, 56], [0], [32], [1], [1], "channels 0:32"),
            ([1, 64, 56, 56], [1, 1], [-1, -1], [2, 3], [1, 1], "crop 1:-1 on H,W"),
            ([1, 32, 112, 112], [0, 0], [big, big], [2, 3], [2, 2], "::2 on H,W (Focus)"),
            ([1, 32, 112, 112], [1, 1], [big, big], [2, 3], [2, 2], "1::2 on H,W (Focus)"),
            ([1, 64, 56, 56], [-1], [-big], [3], [-1], "reverse W (flip)"),
            ([1, 64, 56, 56], [-1], [-big], [1], [-2], "every 2nd channel backwards"),
            ([1, 128, 768], [0], [384], [-1], [1], "last axis :384"),
            ([1, 128, 768], [-1], [big], [1], [1], "last token"),
            ([8, 128, 64], [2], [6], [0], [1], "axis 0 2:6"),
            ([1, 16, 16, 16], [0, -4], [8, big], [1, 3], [1, 1], "small, channels and W"),
            ([1, 16, 16, 16], [0], [big], [2], [2], "small ::2 on H")]:
        s.add("slice", f"Slice {note} starts{starts} ends{['max' if e == big else '-max' if e == -big else e for e in ends]}"
              f" axes{axes} steps{steps} {shape_text(size)}".replace("'", ""),
              [node("Slice", ["x", "starts", "ends", "axes", "steps"])], [("x", s.normal(size))],
              [("starts", np.array(starts, I64)), ("ends", np.array(ends, I64)), ("axes", np.array(axes, I64)),
               ("steps", np.array(steps, I64))])
    # Gather
    for size, axis, idx, note in [
            ([8, 128, 768], 0, np.array(0, I64), "scalar index (x[0])"),
            ([1, 128, 768], 1, np.array(0, I64), "scalar index (class token x[:,0])"),
            ([1, 64, 56, 56], 1, None, "channel permutation"),
            ([4096, 64], 0, None, "1024 rows"),
            ([1, 3, 640], 2, np.array([5, 1, 9, 100, 639], I64), "5 columns"),
            ([16, 16], 1, np.array(3, I64), "small scalar")]:
        if idx is None:
            count = size[axis] if axis == 1 else 1024
            idx = s.rng(f"gather{size}").integers(0, size[axis], count).astype(I64)
        s.add("gather", f"Gather axis{axis} {note} indices{shape_text(idx.shape)} {shape_text(size)}",
              [node("Gather", ["x", "i"], axis=axis)], [("x", s.normal(size))], [("i", idx)])
    for vocab, dim, seq in [(10000, 256, 128), (30522, 128, 16)]:
        table = s.normal([vocab, dim], key="table")
        ids = s.rng(f"ids{vocab}").integers(0, vocab, [1, seq]).astype(I64)
        s.add("gather", f"Gather axis0 embedding [{vocab},{dim}] with ids [1,{seq}] input",
              [node("Gather", ["table", "ids"], axis=0)], [("ids", ids)], [("table", table)])
    # Where
    s.add("where", "Where mask [1,1,128,128] x [1,12,128,128] else scalar (attention mask)",
          [node("Where", ["m", "x", "fill"])],
          [("m", s.normal([1, 1, 128, 128]) > 0), ("x", s.normal([1, 12, 128, 128], key="x"))],
          [("fill", np.array(-1e4, F32))])
    s.add("where", "Where same shape [1,64,56,56]", [node("Where", ["m", "x", "z"])],
          [("m", s.normal([1, 64, 56, 56]) > 0), ("x", s.normal([1, 64, 56, 56], key="x")),
           ("z", s.normal([1, 64, 56, 56], key="z"))])
    s.add("where", "Where cond [56,56] over [1,64,56,56] and [64,1,1]", [node("Where", ["m", "x", "z"])],
          [("m", s.normal([56, 56]) > 0), ("x", s.normal([1, 64, 56, 56], key="x"))], [("z", s.normal([64, 1, 1], key="z"))])
    s.add("where", "Where same shape small [1,16,16,16]", [node("Where", ["m", "x", "z"])],
          [("m", s.normal([1, 16, 16, 16]) > 0), ("x", s.normal([1, 16, 16, 16], key="x")),
           ("z", s.normal([1, 16, 16, 16], key="z"))])
    # Expand, Tile
    for size, shape, note in [([1, 64, 1, 1], [1, 64, 56, 56], "per-channel to map"),
                              ([1, 1, 128], [8, 128, 128], "row to batch"),
                              ([1, 1, 1, 128], [1, 1, 128, 128], "mask row"),
                              ([16, 1], [16, 16], "small column")]:
        s.add("expand", f"Expand {shape_text(size)} -> {shape_text(shape)} ({note})", [node("Expand", ["x", "shape"])],
              [("x", s.normal(size))], [("shape", np.array(shape, I64))])
    for size, reps in [([1, 64, 28, 28], [1, 1, 2, 2]), ([1, 128, 64], [4, 1, 1]), ([1, 32, 1, 1], [1, 1, 56, 56]),
                       ([4, 16], [2, 3])]:
        s.add("tile", f"Tile repeats{shape_text(reps)} {shape_text(size)}", [node("Tile", ["x", "r"])],
              [("x", s.normal(size))], [("r", np.array(reps, I64))])
    # DepthToSpace, SpaceToDepth
    for size, bs, mode in [([1, 256, 28, 28], 2, "DCR"), ([1, 256, 28, 28], 2, "CRD"), ([1, 64, 56, 56], 4, "DCR"),
                           ([1, 48, 112, 112], 4, "CRD"), ([1, 16, 8, 8], 2, "DCR")]:
        s.add("depthtospace", f"DepthToSpace {mode} block{bs} {shape_text(size)}",
              [node("DepthToSpace", ["x"], blocksize=bs, mode=mode)], [("x", s.normal(size))])
    for size, bs in [([1, 16, 112, 112], 2), ([1, 3, 224, 224], 4), ([1, 4, 16, 16], 2)]:
        s.add("spacetodepth", f"SpaceToDepth block{bs} {shape_text(size)}",
              [node("SpaceToDepth", ["x"], blocksize=bs)], [("x", s.normal(size))])


# ---------------------------------------------------------------- Cast
def casts(s):
    for n in (4096, 1 << 20):
        shape = [n]
        x = s.normal(shape, 50.0)
        s.add("cast", f"Cast float->int64 [{n}]", [node("Cast", ["x"], to=TensorProto.INT64)], [("x", x)])
        s.add("cast", f"Cast int64->float [{n}]", [node("Cast", ["x"], to=TensorProto.FLOAT)],
              [("x", x.astype(I64))])
        s.add("cast", f"Cast float->float16 [{n}]", [node("Cast", ["x"], to=TensorProto.FLOAT16)],
              [("x", s.normal(shape, 3.0, key="h"))])
        s.add("cast", f"Cast float16->float [{n}]", [node("Cast", ["x"], to=TensorProto.FLOAT)],
              [("x", s.normal(shape, 3.0, np.float16, key="h"))])
        s.add("cast", f"Cast int32->float [{n}]", [node("Cast", ["x"], to=TensorProto.FLOAT)],
              [("x", x.astype(np.int32))])
        s.add("cast", f"Cast bool->float [{n}]", [node("Cast", ["x"], to=TensorProto.FLOAT)], [("x", x > 0)])
        s.add("cast", f"Cast float->bool [{n}]", [node("Cast", ["x"], to=TensorProto.BOOL)],
              [("x", np.where(np.abs(x) < 20, 0, x).astype(F32))])


# ---------------------------------------------------------------- normalization
def norms(s):
    for size, axis, bias in [([1, 128, 768], -1, True), ([16, 256], -1, True), ([8, 197, 384], -1, False),
                             ([8, 64, 32], -2, True), ([1, 32, 64, 64], -2, True)]:
        normalized = size[axis:]
        consts = [("gamma", s.normal(normalized, 0.2, key="g") + 1)]
        ins = ["x", "gamma"]
        if bias:
            consts.append(("beta", s.normal(normalized, 0.2, key="b")))
            ins.append("beta")
        s.add("layernorm", f"LayerNormalization axis{axis}{' bias' if bias else ''} {shape_text(size)}",
              [node("LayerNormalization", ins, axis=axis, epsilon=1e-5)], [("x", s.normal(size, 2.0))],
              consts, opset=17)
    for size in ([1, 64, 56, 56], [1, 32, 16, 16], [4, 128, 1000]):
        c = size[1]
        s.add("instancenorm", f"InstanceNormalization {shape_text(size)}",
              [node("InstanceNormalization", ["x", "s", "b"], epsilon=1e-5)], [("x", s.normal(size, 2.0))],
              [("s", s.normal([c], 0.2, key="s") + 1), ("b", s.normal([c], 0.2, key="b"))])
    for size in ([1, 64, 56, 56], [1, 32, 28, 28], [4, 128, 256], [64, 512]):
        c = size[1]
        consts = [("s", s.normal([c], 0.2, key="s") + 1), ("b", s.normal([c], 0.2, key="b")),
                  ("m", s.normal([c], 0.2, key="m")), ("v", s.uniform([c], 0.5, 2.0, key="v"))]
        s.add("batchnorm", f"BatchNormalization (inference) {shape_text(size)}",
              [node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-5)], [("x", s.normal(size))], consts)


# ---------------------------------------------------------------- recurrent
def recurrent(s):
    for op in ("LSTM", "GRU"):
        gates = 4 if op == "LSTM" else 3
        for seq, batch, inp, hidden, direction, lbr in [
                (16, 1, 64, 64, "forward", 1), (64, 1, 128, 128, "forward", 1), (32, 1, 256, 256, "forward", 1),
                (64, 4, 64, 128, "forward", 1), (16, 1, 128, 128, "bidirectional", 1),
                (32, 1, 64, 256, "bidirectional", 1), (64, 1, 128, 64, "reverse", 1),
                (32, 1, 128, 128, "forward", 0)]:
            if op == "LSTM" and lbr == 0:
                continue  # linear_before_reset is GRU's
            dirs = 2 if direction == "bidirectional" else 1
            w = s.normal([dirs, gates * hidden, inp], 1.0 / np.sqrt(inp), key="w")
            r = s.normal([dirs, gates * hidden, hidden], 1.0 / np.sqrt(hidden), key="r")
            b = s.normal([dirs, 2 * gates * hidden], 0.1, key="b")
            attrs = dict(hidden_size=hidden, direction=direction)
            d = f"{op} {direction} seq{seq} batch{batch} input{inp} hidden{hidden}"
            if op == "GRU":
                attrs["linear_before_reset"] = lbr
                d += f" linear_before_reset{lbr}"
            outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
            s.add(op.lower(), d, [node(op, ["x", "w", "r", "b"], outs, **attrs)],
                  [("x", s.normal([seq, batch, inp]))], [("w", w), ("r", r), ("b", b)], outputs=outs)


# ---------------------------------------------------------------- index ops
def index_ops(s):
    for size, axis, keep, last in [([1, 1000], 1, 1, 0), ([8, 128, 1000], -1, 0, 0), ([1, 21, 128, 128], 1, 0, 0),
                                   ([64, 64], 0, 1, 1)]:
        s.add("argmax", f"ArgMax axis{axis} keepdims{keep} select_last_index{last} {shape_text(size)}",
              [node("ArgMax", ["x"], axis=axis, keepdims=keep, select_last_index=last)], [("x", s.normal(size))])
    s.add("argmax", "ArgMin axis-1 keepdims0 [8,128,1000]", [node("ArgMin", ["x"], axis=-1, keepdims=0)],
          [("x", s.normal([8, 128, 1000]))])
    for size, k, axis in [([1, 1000], 5, -1), ([8, 1000], 10, -1), ([1, 30000], 100, -1), ([1, 8400, 80], 1, -1),
                          ([1, 256, 64], 16, 1), ([32, 32], 4, -1)]:
        s.add("topk", f"TopK k{k} axis{axis} largest {shape_text(size)}",
              [node("TopK", ["x", "k"], ["values", "indices"], axis=axis)], [("x", s.normal(size))],
              [("k", np.array([k], I64))], outputs=("values", "indices"))
    for size, axis, excl, rev in [([1, 1024], 1, 0, 0), ([8, 128, 256], 1, 0, 0), ([8, 128, 256], 2, 0, 0),
                                  ([8, 128, 256], 2, 1, 1), ([4, 64], 1, 0, 0)]:
        s.add("cumsum", f"CumSum axis{axis} exclusive{excl} reverse{rev} {shape_text(size)}",
              [node("CumSum", ["x", "axis"], exclusive=excl, reverse=rev)], [("x", s.normal(size))],
              [("axis", np.array(axis, I64))])


FAMILIES = [pools, convs, matmuls, resizes, reductions, transposes, binaries, unaries, movement, casts, norms,
            recurrent, index_ops]


def build(folder):
    sweep = Sweep(folder)
    for family in FAMILIES:
        family(sweep)
    with open(os.path.join(folder, "manifest.tsv"), "w") as f:
        for row in sweep.rows:
            f.write("\t".join(row) + "\n")


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: bench/make_op_models.py FOLDER")
    folder = os.path.abspath(sys.argv[1])
    real.build_cached(os.path.dirname(folder), os.path.basename(folder), [SCRIPT], build)
    with open(os.path.join(folder, "manifest.tsv")) as f:
        for line in f:
            cid, model, files, desc = line.rstrip("\n").split("\t")
            files = " ".join(f"{kv.split('=', 1)[0]}={os.path.join(folder, kv.split('=', 1)[1])}" for kv in files.split())
            print("\t".join([cid, os.path.join(folder, model), files, desc]))


if __name__ == "__main__":
    main()
