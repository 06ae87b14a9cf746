#!/usr/bin/env python3
"""Where the constants of quantize's speed estimate (quant/speed.h) come from: single-op models,
float and in the QDQ form onnxtool writes, timed per kernel in onnxruntime-node's profiler.

    bench/quant_op_costs.py [RUNS]      (default 200 runs per model; about 2 minutes)

Per case, a float model (X -> Conv -> Y) and its QDQ twin (X -> QuantizeLinear -> DequantizeLinear ->
Conv with int8 per-channel weights through DequantizeLinear -> QuantizeLinear -> DequantizeLinear
-> Y), which onnxruntime fuses into one QLinearConv. Each model runs RUNS times at THREADS intra-op
threads (default 2) with profiling on; the table gives the mean kernel time of the Conv (Conv or
FusedConv; onnxruntime's layout reorders around it are left out, as in a chain of Convs they
cancel) and of the QLinearConv, and their ratio. Then: what an activation that onnxruntime fuses into
a float Conv costs as an op of its own after a QLinearConv (the estimate leaves this out: on the
PaddleOCR detectors, whose HardSwishes it concerns, charging it made the estimate refuse a measured
1.13-1.23x); QuantizeLinear and DequantizeLinear per element, from cache-sized to 3 M elements; the
fixed cost of one kernel: a chain of 64 Relus and one of 64 QuantizeLinear/DequantizeLinear pairs on
8-element tensors, whole-run latency (no profiler) per node. Last, a least-squares fit of the
dense Convs' times to MACs and elements, in the estimate's units.

Environment: ONNXTOOL_CACHE_DIR (default .cache/, where onnxruntime-node is), THREADS.
Needs python3-onnx and python3-numpy. Not a ctest entry.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("ONNXTOOL_CACHE_DIR", os.path.join(ROOT, ".cache"))
THREADS = int(os.environ.get("THREADS", "2"))
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 200

# name, input channels, output channels, kernel, group, stride, height, width
CASES = [
    ("depthwise 3x3", 16, 16, 3, 16, 1, 24, 96),
    ("depthwise 3x3", 64, 64, 3, 64, 1, 80, 80),
    ("depthwise 3x3 s2", 32, 32, 3, 32, 2, 24, 96),
    ("depthwise 5x5", 96, 96, 5, 96, 1, 3, 96),
    ("depthwise 5x5", 200, 200, 5, 200, 1, 2, 96),
    ("depthwise 5x5", 64, 64, 5, 64, 1, 80, 80),
    ("stem 3x3 s2", 3, 16, 3, 1, 2, 48, 192),
    ("stem 3x3 s2", 3, 32, 3, 1, 2, 320, 320),
    ("pointwise", 16, 96, 1, 1, 1, 3, 96),
    ("pointwise", 200, 32, 1, 1, 1, 2, 96),
    ("pointwise", 64, 64, 1, 1, 1, 80, 80),
    ("pointwise", 128, 256, 1, 1, 1, 40, 40),
    ("dense 3x3", 32, 32, 3, 1, 1, 80, 80),
    ("dense 3x3", 64, 64, 3, 1, 1, 40, 40),
    ("dense 3x3", 128, 128, 3, 1, 1, 20, 20),
    ("grouped 3x3 (8 per group)", 64, 64, 3, 8, 1, 40, 40),
    ("narrow 3x3", 8, 32, 3, 1, 1, 80, 80),
    ("narrow pointwise", 8, 16, 1, 1, 1, 24, 96),
    ("narrow pointwise", 8, 64, 1, 1, 1, 80, 80),
    # a detector's first stages at 512x736: tensors far larger than the caches
    ("pointwise", 16, 32, 1, 1, 1, 256, 368),
    ("dense 3x3", 16, 16, 3, 1, 1, 256, 368),
    ("depthwise 3x3", 32, 32, 3, 32, 1, 128, 184),
    ("pointwise", 32, 64, 1, 1, 1, 128, 184),
]

PROFILE_JS = r"""
const ort = require(process.argv[2]);
(async () => {
  const [model, threads, runs, prefix] = [process.argv[3], +process.argv[4], +process.argv[5], process.argv[6]];
  const dims = JSON.parse(process.argv[7]);
  const profile = process.argv[8] === '1';
  const opts = {intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
                extra: {session: {intra_op: {allow_spinning: '0'}}}};
  if (profile) Object.assign(opts, {enableProfiling: true, profileFilePrefix: prefix});
  const s = await ort.InferenceSession.create(model, opts);
  const data = new Float32Array(dims.reduce((a, b) => a * b));
  for (let i = 0; i < data.length; i++) data[i] = Math.sin(i * 0.37) * 2;
  const feed = {[s.inputNames[0]]: new ort.Tensor('float32', data, dims)};
  await s.run(feed);
  const times = [];
  for (let r = 0; r < runs; r++) {
    const t0 = process.hrtime.bigint();
    await s.run(feed);
    times.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  if (profile) s.endProfiling();
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({median_us: times[times.length >> 1]}));
})();
"""


def conv_models(cin, cout, k, group, stride, h, w, activation=None):
    """The float model and its QDQ twin; with `activation`, the Conv's output goes through it (the
    float Conv's fused activation; in QDQ a float op between DequantizeLinear and the output)."""
    rng = np.random.default_rng(0)
    wshape = [cout, cin // group, k, k]
    weight = rng.standard_normal(wshape).astype(np.float32) * 0.1
    bias = rng.standard_normal(cout).astype(np.float32) * 0.1
    attrs = dict(kernel_shape=[k, k], group=group, strides=[stride, stride], pads=[k // 2] * 4)
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, cin, h, w])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)

    def model(nodes, inits):
        g = helper.make_graph(nodes, "g", [x], [y], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
        m.ir_version = 7
        return m

    act = [helper.make_node(activation, ["A"], ["Y"])] if activation else []
    conv_out = "A" if activation else "Y"
    fp32 = model([helper.make_node("Conv", ["X", "W", "B"], [conv_out], **attrs)] + act,
                 [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "B")])
    w_scale = (np.abs(weight).reshape(cout, -1).max(axis=1) / 127).astype(np.float32)
    wq = np.clip(np.round(weight / w_scale.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
    x_scale, y_scale = np.float32(4 / 255), np.float32(8 / 255)
    bq = np.round(bias / (x_scale * w_scale)).astype(np.int32)
    inits = [
        numpy_helper.from_array(wq, "Wq"), numpy_helper.from_array(w_scale, "Ws"),
        numpy_helper.from_array(np.zeros(cout, np.int8), "Wz"),
        numpy_helper.from_array(bq, "Bq"), numpy_helper.from_array((x_scale * w_scale).astype(np.float32), "Bs"),
        numpy_helper.from_array(np.zeros(cout, np.int32), "Bz"),
        numpy_helper.from_array(np.array(x_scale), "xs"), numpy_helper.from_array(np.array(128, np.uint8), "xz"),
        numpy_helper.from_array(np.array(y_scale), "ys"), numpy_helper.from_array(np.array(128, np.uint8), "yz"),
    ]
    qdq = model([
        helper.make_node("QuantizeLinear", ["X", "xs", "xz"], ["Xq"]),
        helper.make_node("DequantizeLinear", ["Xq", "xs", "xz"], ["Xd"]),
        helper.make_node("DequantizeLinear", ["Wq", "Ws", "Wz"], ["Wd"], axis=0),
        helper.make_node("DequantizeLinear", ["Bq", "Bs", "Bz"], ["Bd"], axis=0),
        helper.make_node("Conv", ["Xd", "Wd", "Bd"], ["C"], **attrs),
        helper.make_node("QuantizeLinear", ["C", "ys", "yz"], ["Cq"]),
        helper.make_node("DequantizeLinear", ["Cq", "ys", "yz"], [conv_out]),
    ] + act, inits)
    return fp32, qdq


def qdq_model(shape):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(np.array(np.float32(0.01)), "s"),
             numpy_helper.from_array(np.array(128, np.uint8), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["X", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["Y"])]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m


def chain_model(n, qdq):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    nodes, inits, last = [], [], "X"
    if qdq:
        inits = [numpy_helper.from_array(np.array(np.float32(0.01)), "s"),
                 numpy_helper.from_array(np.array(128, np.uint8), "z")]
    for i in range(n):
        out = "Y" if i == n - 1 else "t%d" % i
        if qdq:
            nodes.append(helper.make_node("QuantizeLinear", [last, "s", "z"], ["q%d" % i]))
            # a Relu between the pairs keeps onnxruntime from removing Q -> DQ as a no-op
            nodes.append(helper.make_node("DequantizeLinear", ["q%d" % i, "s", "z"], ["d%d" % i]))
            nodes.append(helper.make_node("Relu", ["d%d" % i], [out]))
        else:
            nodes.append(helper.make_node("Relu", [last], [out]))
        last = out
    g = helper.make_graph(nodes, "g", [x], [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    return m


def run(tmp, model, dims, profile):
    path = os.path.join(tmp, "m.onnx")
    onnx.save(model, path)
    script = os.path.join(tmp, "profile.js")
    with open(script, "w") as f:
        f.write(PROFILE_JS)
    ort = os.path.join(CACHE, "ort", "node_modules", "onnxruntime-node")
    out = subprocess.run(["node", script, ort, path, str(THREADS), str(RUNS), os.path.join(tmp, "prof"),
                          json.dumps(dims), "1" if profile else "0"],
                         check=True, capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        if line.startswith("{"):
            result.update(json.loads(line))
    kernels = {}
    if profile:
        files = [f for f in os.listdir(tmp) if f.startswith("prof") and f.endswith(".json")]
        if len(files) != 1:
            sys.exit("expected one profile in %s, found %d" % (tmp, len(files)))
        with open(os.path.join(tmp, files[0])) as f:
            events = json.load(f)
        os.remove(os.path.join(tmp, files[0]))
        for e in events:
            if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
                op = e["args"]["op_name"]
                kernels[op] = kernels.get(op, 0) + e["dur"] / (RUNS + 1)
    return kernels, result["median_us"]


def fit(rows):
    """Least squares of time = x * MACs + y * elements, relative to each row's time."""
    a = np.array([[m / t, e / t] for m, e, t in rows])
    (x, y), *_ = np.linalg.lstsq(a, np.ones(len(rows)), rcond=None)
    return x, y


def main():
    convs, activations, qdq, chain = [], [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cin, cout, k, group, stride, h, w in CASES:
            fp32, quantized = conv_models(cin, cout, k, group, stride, h, w)
            kf, _ = run(tmp, fp32, [1, cin, h, w], True)
            kq, _ = run(tmp, quantized, [1, cin, h, w], True)
            oh, ow = (h + stride - 1) // stride, (w + stride - 1) // stride
            convs.append(dict(name=name, cin=cin, cout=cout, oh=oh, ow=ow, slow=group > 1 or cin < 8,
                              macs=oh * ow * cout * (cin // group) * k * k, elements=cin * h * w + cout * oh * ow,
                              float=kf.get("Conv", 0) + kf.get("FusedConv", 0), int8=kq.get("QLinearConv", 0)))
        for activation in ("HardSwish", "HardSigmoid", "Sigmoid", "LeakyRelu", "Tanh"):
            for k in (1, 3):
                alone, _ = conv_models(64, 64, k, 1, 1, 40, 40)
                fp32, quantized = conv_models(64, 64, k, 1, 1, 40, 40, activation)
                kf, _ = run(tmp, fp32, [1, 64, 40, 40], True)
                ka, _ = run(tmp, alone, [1, 64, 40, 40], True)
                kq, _ = run(tmp, quantized, [1, 64, 40, 40], True)
                own = sum(t for op, t in kq.items() if op not in ("QLinearConv", "QuantizeLinear", "DequantizeLinear"))
                activations.append((activation, k, sum(kf.values()), sum(ka.values()), own))
        for shape in ([1, 32, 256, 368], [1, 64, 80, 80], [1, 32, 24, 96], [1, 200, 2, 96]):
            kernels, _ = run(tmp, qdq_model(shape), shape, True)
            qdq.append((shape, kernels.get("QuantizeLinear", 0), kernels.get("DequantizeLinear", 0)))
        n = 64
        _, chain["Relu"] = run(tmp, chain_model(n, False), [1, 8], False)
        _, pairs = run(tmp, chain_model(n, True), [1, 8], False)
        chain["QuantizeLinear + DequantizeLinear (each)"] = (pairs - chain["Relu"]) / 2
        chain["Relu"] /= n
        chain["QuantizeLinear + DequantizeLinear (each)"] /= n

    dense = [c for c in convs if not c["slow"]]
    mac, element = fit([(c["macs"], c["elements"], c["float"]) for c in dense])
    qmac, qelement = fit([(c["macs"], c["elements"], c["int8"]) for c in dense])
    print("| case | in -> out channels | output | MACs | float Conv µs | QLinearConv µs | int8 / float |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for c in convs:
        print("| %s | %d -> %d | %dx%d | %.3gM | %.1f | %.1f | %.2f |" % (
            c["name"], c["cin"], c["cout"], c["oh"], c["ow"], c["macs"] / 1e6, c["float"], c["int8"],
            c["int8"] / c["float"] if c["float"] else float("nan")))
    print()
    print("| Conv 64 -> 64 at 40x40, then | float Conv + activation µs | float Conv alone µs | "
          "QDQ: the activation's own kernels µs | per element, float MACs |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for activation, k, tf, ta, own in activations:
        print("| %s (%dx%d Conv) | %.1f | %.1f | %.1f | %.0f |" % (activation, k, k, tf, ta, own, own / (64 * 40 * 40) / mac))
    print()
    print("| QuantizeLinear + DequantizeLinear | elements | Q µs | DQ µs |")
    print("| --- | ---: | ---: | ---: |")
    for shape, q, d in qdq:
        print("| %s | %d | %.1f | %.1f |" % ("x".join(map(str, shape)), int(np.prod(shape)), q, d))
    print()
    print("| chain of 64 on 8 elements | µs per node |")
    print("| --- | ---: |")
    for name, us in chain.items():
        print("| %s | %.2f |" % (name, us))
    ratios = [c["int8"] / c["float"] for c in convs if c["slow"] and c["float"]]
    rates = [(q + d) / 2 / int(np.prod(shape)) for shape, q, d in qdq]
    print()
    print("Fit, in float MACs of a dense Conv (%.2f ps each), over the Convs that are not grouped and have 8 or more "
          "input channels:" % (mac * 1e6))
    print("  float Conv: 1 per MAC + %.1f per input/output element" % (element / mac))
    print("  QLinearConv: %.3f per MAC + %.1f per input/output element" % (qmac / mac, qelement / mac))
    print("  QLinearConv, grouped or of fewer than 8 input channels: %.2f x the float Conv (median of %s)" % (
        float(np.median(ratios)), ", ".join("%.2f" % r for r in ratios)))
    print("  QuantizeLinear or DequantizeLinear: %.1f per element (median)" % (float(np.median(rates)) / mac))


if __name__ == "__main__":
    main()
