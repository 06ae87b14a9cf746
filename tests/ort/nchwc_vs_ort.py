#!/usr/bin/python3
"""onnxruntime's channel-blocked ops (com.microsoft.nchwc) in onnxtool, on small generated networks.

    nchwc_vs_ort.py ONNXTOOL SOURCE_DIR CACHE_DIR

Each case is a plain network of a few nodes that onnxruntime's NCHWc transformer rewrites: the
case's model is saved by onnxruntime-node optimized at its "all" level (the blocked model, with
the weights reordered as onnxruntime reorders them on this machine), and the test checks that
the rewrite made the ops the case is about (ReorderInput/Output with channels not a multiple of
the block, Conv in each weight format: general, depthwise, first layer on NCHW input; with Sum
and each fused activation; the pools; Upsample; NHWC reorders). Then:
 - `onnxtool check` reports no error on the blocked model;
 - `onnxtool run` of the blocked model matches onnxtool's run of the plain one (the reference) and
   onnxruntime's run of the blocked one, |got - ref| <= 1e-5 + 1e-3 |ref| for every element.
Also: a blocked model written here by hand for block size 8 (the weights reordered by numpy as
MLAS's MlasReorderFilterOIHWBiBo does, a layout this machine's onnxruntime would not write when
its block size is 16) runs right, its block size read from its shapes; and a model whose shapes
fit no block size is refused with one line naming the node.
Exit 0 when all pass, 1 on a failure, 77 when onnxruntime-node is missing.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ort_util import finish, judge_setup, ort_batch  # noqa: E402

onnxtool, source_dir, cache_dir, ort_run, env = judge_setup(sys.argv)
RTOL, ATOL = 1e-3, 1e-5
NCHWC = "com.microsoft.nchwc"
rng = np.random.default_rng(7)


def weights(*shape):
    return (rng.standard_normal(shape) * (1.0 / np.sqrt(np.prod(shape[1:])))).astype(np.float32)


class Net:
    """A plain float network under construction: nodes, initializers, one input."""

    def __init__(self, x_shape, opset=13):
        self.nodes, self.inits, self.outputs = [], [], []
        self.opset = opset
        self.x_shape = x_shape
        self.n = 0

    def name(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    def const(self, array):
        name = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, **attrs):
        out = self.name("t")
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, cin, cout, k=3, group=1, bias=True, **attrs):
        ins = [x, self.const(weights(cout, cin // group, k, k))]
        if bias:
            ins.append(self.const((rng.standard_normal(cout) * 0.1).astype(np.float32)))
        return self.op("Conv", ins, group=group, **attrs)

    def output(self, t):
        self.outputs.append(t)

    def model(self):
        g = helper.make_graph(
            self.nodes, "nchwc_case",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, self.x_shape)],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in self.outputs], self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)], ir_version=8)


def case_reorder_general():
    n = Net([1, 20, 9, 11])
    n.output(n.conv("x", 20, 24, pads=[1, 1, 1, 1]))
    return n, [("ReorderInput", None), ("Conv", lambda a, w: w[1] % 8 == 0 and w[1] > 4), ("ReorderOutput", None)]


def case_first_layer():
    n = Net([1, 3, 10, 10])
    n.output(n.op("Relu", [n.conv("x", 3, 20, strides=[2, 2])]))
    return n, [("Conv", lambda a, w: w[1] == 3 and a.get("activation") == b"Relu")]


def case_depthwise():
    n = Net([1, 20, 8, 8])
    t = n.conv("x", 20, 20, pads=[1, 1, 1, 1])
    n.output(n.conv(t, 20, 20, group=20, pads=[1, 1, 1, 1], strides=[2, 1]))
    return n, [("Conv", lambda a, w: w[1] == 1 and a.get("group", 1) == w[0])]


def case_sum():
    n = Net([1, 16, 8, 8])
    a = n.conv("x", 16, 16, k=1)
    b = n.conv("x", 16, 16, pads=[1, 1, 1, 1])
    n.output(n.op("Relu", [n.op("Add", [a, b])]))
    return n, [("Conv", lambda a, w: a.get("_inputs", 0) == 4 and a.get("activation") == b"Relu")]


def case_activation(kind, make):
    def build():
        n = Net([1, 16, 7, 7], opset=14)
        t = n.conv("x", 16, 20, pads=[1, 1, 1, 1])
        n.output(make(n, t))
        return n, [("Conv", lambda a, w: a.get("activation") == kind.encode())]
    build.__name__ = "case_activation_" + kind
    return build


def case_activation_HardSwish():
    """HardSwish, which onnxruntime fuses into Conv from other patterns (PaddleOCR v3's detector)
    but not from a plain HardSwish after a Conv: onnxruntime rewrites the network with HardSigmoid
    in its place, whose blocked Conv is then given HardSwish by hand (swap_activation)."""
    n = Net([1, 16, 7, 7], opset=14)
    n.output(n.op("HardSigmoid", [n.conv("x", 16, 20, pads=[1, 1, 1, 1])], alpha=0.3, beta=0.4))
    return n, [("Conv", lambda a, w: a.get("activation") == b"HardSwish")]


case_activation_HardSwish.swap = ("HardSigmoid", "HardSwish")


def swap_activation(model, old, new):
    """The plain op `old` becomes `new` (no attributes); a blocked Conv's fused `old` too."""
    for node in model.graph.node:
        acts = [a for a in node.attribute if a.name == "activation" and a.s == old.encode()]
        if node.op_type == old or acts:
            keep = [a for a in node.attribute if a.name not in ("activation", "activation_params", "alpha", "beta")]
            del node.attribute[:]
            node.attribute.extend(keep)
            if acts:
                node.attribute.append(helper.make_attribute("activation", new))
            else:
                node.op_type = new
    return model


ACTIVATIONS = [
    ("Sigmoid", lambda n, t: n.op("Sigmoid", [t])),
    ("Tanh", lambda n, t: n.op("Tanh", [t])),
    ("LeakyRelu", lambda n, t: n.op("LeakyRelu", [t], alpha=0.1)),
    ("Clip", lambda n, t: n.op("Clip", [t, n.const(np.float32(-0.5)), n.const(np.float32(0.6))])),
    ("HardSigmoid", lambda n, t: n.op("HardSigmoid", [t], alpha=0.3, beta=0.4)),

]


def case_pools():
    n = Net([1, 32, 9, 9])
    t = n.conv("x", 32, 32, k=1)
    n.output(n.op("MaxPool", [t], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    n.output(n.op("AveragePool", [t], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1))
    n.output(n.op("AveragePool", [t], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    n.output(n.op("MaxPool", [t], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1))
    n.output(n.op("GlobalMaxPool", [t]))
    n.output(n.op("GlobalAveragePool", [t]))
    return n, [("MaxPool", None), ("AveragePool", None), ("GlobalMaxPool", None), ("GlobalAveragePool", None)]


def case_upsample():
    n = Net([1, 32, 5, 6])
    t = n.conv("x", 32, 32, k=1)
    empty = n.const(np.zeros(0, np.float32))
    n.output(n.op("Resize", [t, empty, n.const(np.array([1, 1, 2, 3], np.float32))], mode="nearest",
                  coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
    for coord in ("half_pixel", "align_corners", "asymmetric"):
        n.output(n.op("Resize", [t, empty, n.const(np.array([1, 1, 2, 2], np.float32))], mode="linear",
                      coordinate_transformation_mode=coord))
    return n, [("Upsample", lambda a, w: a.get("mode", b"nearest") == b"nearest"),
               ("Upsample", lambda a, w: a.get("coordinate_transformation_mode") == b"half_pixel"),
               ("Upsample", lambda a, w: a.get("coordinate_transformation_mode") == b"align_corners")]


def case_nhwc():
    n = Net([1, 7, 6, 20])
    t = n.op("Transpose", ["x"], perm=[0, 3, 1, 2])
    t = n.conv(t, 20, 24, pads=[1, 1, 1, 1])
    n.output(n.op("Transpose", [t], perm=[0, 2, 3, 1]))
    return n, [("ReorderInput", lambda a, w: a.get("channels_last") == 1),
               ("ReorderOutput", lambda a, w: a.get("channels_last") == 1)]


def case_concat():
    n = Net([1, 16, 6, 6])
    a = n.conv("x", 16, 16, k=1)
    b = n.conv("x", 16, 16, pads=[1, 1, 1, 1])
    n.output(n.conv(n.op("Concat", [a, b], axis=1), 32, 24, k=1))
    return n, [("Conv", None)]


CASES = [case_reorder_general, case_first_layer, case_depthwise, case_sum] + \
    [case_activation(k, f) for k, f in ACTIVATIONS] + [case_activation_HardSwish, case_pools, case_upsample, case_nhwc, case_concat]


def node_facts(model):
    """[(op_type, attributes, weight dims)] of the com.microsoft.nchwc nodes."""
    inits = {i.name: list(i.dims) for i in model.graph.initializer}
    out = []
    for node in model.graph.node:
        if node.domain != NCHWC:
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        attrs["_inputs"] = len([i for i in node.input if i])
        out.append((node.op_type, attrs, inits.get(node.input[1], []) if len(node.input) > 1 else []))
    return out


def judge(label, got, ref):
    """Failure lines comparing {name: array} got with ref."""
    bad, worst = [], 0.0
    for name, r in ref.items():
        g = got.get(name)
        if g is None or g.shape != r.shape:
            bad.append(f"{label} {name}: shape {None if g is None else g.shape} vs {r.shape}")
            continue
        diff = np.abs(g.astype(np.float64) - r.astype(np.float64))
        worst = max(worst, float(diff.max()) if diff.size else 0.0)
        over = diff > ATOL + RTOL * np.abs(r)
        if over.any():
            i = np.unravel_index(int(np.argmax(diff - RTOL * np.abs(r))), r.shape)
            bad.append(f"{label} {name}: {int(over.sum())} of {r.size} beyond tolerance, worst {g[i]:.7g} vs {r[i]:.7g}")
    return bad, worst


def run_onnxtool(model, x, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    r = subprocess.run([onnxtool, "run", model, "--input", f"x={x}", "--output-dir", out_dir], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"onnxtool run {os.path.basename(model)}: {r.stderr.strip()[:300]}")
    return {f[:-4]: np.load(os.path.join(out_dir, f)) for f in os.listdir(out_dir) if f.endswith(".npy")}


def check_clean(model):
    r = subprocess.run([onnxtool, "check", model], capture_output=True, text=True)
    text = r.stdout + r.stderr
    if r.returncode != 0 or "custom domain" in text:
        return [f"onnxtool check {os.path.basename(model)}: exit {r.returncode}: {text.strip()[:300]}"]
    return []


def block8_model(work):
    """A blocked model for block size 8 written here: ReorderInput (20 channels -> 24), a general
    Conv 20 -> 20 of weights [24, 24, 3, 3] in OIHWBiBo order, ReorderOutput; and the plain Conv."""
    b = 8
    w = weights(20, 20, 3, 3)
    bias = (rng.standard_normal(20) * 0.1).astype(np.float32)
    wp = np.zeros((24, 24, 3, 3), np.float32)
    wp[:20, :20] = w
    # [O/B, Bo, I/B, Bi, kh, kw] -> [O/B, I/B, kh, kw, Bi, Bo]
    blocked = wp.reshape(3, b, 3, b, 3, 3).transpose(0, 2, 4, 5, 3, 1).reshape(24, 24, 3, 3)
    bp = np.zeros(24, np.float32)
    bp[:20] = bias
    inits = [numpy_helper.from_array(blocked, "wb"), numpy_helper.from_array(bp, "bb")]
    nodes = [helper.make_node("ReorderInput", ["x"], ["xb"], domain=NCHWC),
             helper.make_node("Conv", ["xb", "wb", "bb"], ["yb"], domain=NCHWC, pads=[1, 1, 1, 1], name="conv8"),
             helper.make_node("ReorderOutput", ["yb"], ["y"], domain=NCHWC, channels=20, name="out8")]
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 20, 6, 7])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 20, 6, 7])
    g = helper.make_graph(nodes, "block8", [x_info], [y_info], inits)
    blocked_model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(NCHWC, 1)], ir_version=7)
    plain = helper.make_graph([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])], "plain", [x_info], [y_info],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "b")])
    plain_model = helper.make_model(plain, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    paths = [os.path.join(work, "block8.onnx"), os.path.join(work, "block8_plain.onnx")]
    onnx.save(blocked_model, paths[0])
    onnx.save(plain_model, paths[1])
    return paths, blocked_model


def main():
    failures, worst = [], 0.0
    with tempfile.TemporaryDirectory(prefix="onnxtool_nchwc_") as work:
        cases = []
        for build in CASES:
            name = build.__name__[len("case_"):]
            net, expected = build()
            d = os.path.join(work, name)
            os.makedirs(d)
            plain = os.path.join(d, "plain.onnx")
            onnx.save(net.model(), plain)
            x = os.path.join(d, "x.npy")
            np.save(x, rng.standard_normal(net.x_shape).astype(np.float32))
            cases.append((name, d, plain, os.path.join(d, "blocked.onnx"), x, expected, getattr(build, "swap", None)))
        ort_batch(ort_run, env, work, [{"model": c[2], "optimized_model": c[3]} for c in cases])
        for c in cases:  # the reference and the blocked model with the activation swapped
            if c[6]:
                onnx.save(swap_activation(onnx.load(c[2]), *c[6]), c[2])
                onnx.save(swap_activation(onnx.load(c[3]), *c[6]), c[3])
        cases = [c[:6] for c in cases]
        ort_lines = ort_batch(ort_run, env, work, [{"model": c[3], "inputs": {"x": c[4]}, "output_dir": os.path.join(c[1], "ort")}
                                                  for c in cases])
        for (name, d, plain, blocked, x, expected), line in zip(cases, ort_lines):
            facts = node_facts(onnx.load(blocked))
            for op, pred in expected:
                if not any(o == op and (pred is None or pred(a, w)) for o, a, w in facts):
                    failures.append(f"{name}: onnxruntime's rewrite made no nchwc {op} of the kind the case is about "
                                    f"(it made {sorted(set(o for o, _, _ in facts))})")
            failures += check_clean(blocked)
            try:
                ref = run_onnxtool(plain, x, os.path.join(d, "ref"))
                got = run_onnxtool(blocked, x, os.path.join(d, "got"))
            except RuntimeError as e:
                failures.append(f"{name}: {e}")
                continue
            ort = {o["name"]: np.load(o["file"]) for o in line["outputs"]}
            bad_ref, w1 = judge(name + " vs plain", got, ref)
            bad_ort, w2 = judge(name + " vs onnxruntime", got, ort)
            failures += bad_ref + bad_ort
            worst = max(worst, w1, w2)
            ops = sorted(set(o for o, _, _ in facts))
            print(f"{'FAIL' if bad_ref or bad_ort else 'PASS'} {name}: nchwc {', '.join(ops)}; max abs error {max(w1, w2):.2e}")

        # Block size 8, read from the model's shapes.
        (b8, b8_plain), model8 = block8_model(work)
        x8 = os.path.join(work, "x8.npy")
        np.save(x8, rng.standard_normal((1, 20, 6, 7)).astype(np.float32))
        failures += check_clean(b8)
        try:
            bad, w = judge("block 8", run_onnxtool(b8, x8, os.path.join(work, "b8")), run_onnxtool(b8_plain, x8, os.path.join(work, "b8p")))
            failures += bad
            print(f"{'FAIL' if bad else 'PASS'} block size 8 from the model's shapes: max abs error {w:.2e}")
        except RuntimeError as e:
            failures.append(f"block 8: {e}")

        # Shapes that fit no block size: ReorderOutput of 20 channels from 40 padded ones.
        model8.graph.node[2].attribute[0].i = 4
        bad_model = os.path.join(work, "contradiction.onnx")
        onnx.save(model8, bad_model)
        r = subprocess.run([onnxtool, "run", bad_model, "--input", f"x={x8}", "--output-dir", os.path.join(work, "bad")],
                           capture_output=True, text=True)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        if r.returncode == 0 or len(lines) != 1 or "out8" not in lines[0] or "block size" not in lines[0]:
            failures.append(f"contradicting shapes: exit {r.returncode}, stderr {r.stderr.strip()[:300]!r}")
        else:
            print(f"PASS contradicting shapes refused: {lines[0]}")

    for f in failures:
        print("FAIL:", f)
    print(f"{len(CASES)} cases; worst abs error {worst:.2e} (rtol {RTOL}, atol {ATOL})")
    finish(failures)


main()
