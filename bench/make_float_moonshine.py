#!/usr/bin/python3
"""A float32 transformer encoder for the quantization benchmark, made from Moonshine's int8 one.

    bench/make_float_moonshine.py SRC DST

SRC is Moonshine tiny's encoder as @moonshine-ai/moonshine-js ships it (bench/models.sha256's
models/bench/moonshine_encoder_quant.onnx); DST gets the float model. None of our package sources
has a float transformer, and `onnxtool quantize` needs one to be judged on: this is the nearest.
Optimum's dynamic quantization wrote every linear layer of the encoder as the chain

    x_q, x_scale, x_zp = DynamicQuantizeLinear(x)
    acc   = MatMulInteger(x_q, W_q, x_zp, W_zp)          W_q, W_zp: initializers
    y     = Mul(Cast(acc, float), Mul(x_scale, w_scale))  w_scale: an initializer, or one node
                                                          (Reshape, Identity, ...) away from one

(36 of them in the tiny encoder). Each chain becomes y = MatMul(x, W) with W = (W_q - W_zp) *
w_scale, and the nodes and initializers nothing uses any more are dropped; the rest of the graph
(the float MatMuls of the attention, the convolutions, the norms) is kept as it is, but for the
convolutions' weights, which the export stores as int8 decompressed by Cast, Mul and Add nodes:
each becomes the float initializer those nodes compute, as a float model stores it. The float
model is therefore the quantized one without its activation rounding: in onnxruntime its output
agrees with the original's at a cosine of about 0.999 on speech.

What this float model is not is a model trained in float: its weights are Moonshine's 8-bit ones
dequantized, so each weight tensor takes at most 256 distinct values on an evenly spaced grid (one
scale and zero point per tensor in this export; per column where an export has per-column
scales). An 8-bit weight quantization of this model loses less than it would on a native float
model, so weight-only 8 and the weight side of static / dynamic look somewhat better here than
they would elsewhere; 4-bit weights and activation quantization are judged fairly.

Any chain that is not of the shape above (a MatMulInteger fed otherwise, its result used by more
than the Cast, a weight that is not an initializer, a scale that is not per tensor or per column,
a DynamicQuantizeLinear still in use after the rewrite) stops the script with one line on stderr
and exit status 1, writing nothing. Needs Debian's python3 with python3-onnx (1.12) and
python3-numpy.
"""
import os
import sys

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import helper, numpy_helper

# Ops that pass a scale through unchanged in value (the shape is checked against the weight).
PASS_THROUGH = ("Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Cast")


class Unexpected(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Unexpected(message)


def single_user(users, name, op_type, where):
    found = users.get(name, [])
    check(len(found) == 1 and found[0].op_type == op_type,
          f"{where}: {name} should feed exactly one {op_type}, feeds "
          f"{[n.op_type for n in found] or 'nothing'}")
    return found[0]


def per_column(value, columns, what, where):
    """A scale or zero point as a scalar or a [columns] vector (MatMulInteger's per-column form)."""
    check(value.size in (1, columns), f"{where}: {what} has shape {list(value.shape)}, expected one "
          f"value or {columns} (per column)")
    return value.reshape(()) if value.size == 1 else value.reshape(columns)


def float_weight(node, dql, scale_source, inits, producers, outputs):
    """(W_float, x) for one MatMulInteger whose scale Mul takes `scale_source` beside x_scale."""
    where = node.name or node.output[0]
    w_q, x_zp = node.input[1], node.input[2] if len(node.input) > 2 else ""
    w_zp = node.input[3] if len(node.input) > 3 else ""
    check(x_zp == dql.output[2], f"{where}: the activation zero point is not its DynamicQuantizeLinear's")
    check(w_q in inits, f"{where}: the weight {w_q} is not an initializer")
    check(not w_zp or w_zp in inits, f"{where}: the weight zero point {w_zp} is not an initializer")
    w = numpy_helper.to_array(inits[w_q])
    check(w.dtype in (np.uint8, np.int8) and w.ndim == 2, f"{where}: the weight is {w.dtype} {list(w.shape)}, "
          "expected a 2-D uint8 or int8 matrix")
    columns = w.shape[1]
    zp = numpy_helper.to_array(inits[w_zp]) if w_zp else np.zeros((), w.dtype)
    zp = per_column(zp, columns, "the weight zero point", where)

    if scale_source in inits:
        scale = numpy_helper.to_array(inits[scale_source])
    else:
        step = producers.get(scale_source)
        check(step is not None and step.op_type in PASS_THROUGH and step.input[0] in inits,
              f"{where}: the weight scale {scale_source} is neither an initializer nor one "
              f"{'/'.join(PASS_THROUGH)} of one")
        if step.op_type == "Cast":
            to = next((a.i for a in step.attribute if a.name == "to"), None)
            check(to == onnx.TensorProto.FLOAT, f"{where}: the weight scale is cast to type {to}, not float")
        scale = numpy_helper.to_array(inits[step.input[0]])
    check(np.issubdtype(scale.dtype, np.floating), f"{where}: the weight scale is {scale.dtype}")
    scale = per_column(scale, columns, "the weight scale", where)
    check(scale_source not in outputs, f"{where}: the weight scale is a graph output")
    return (w.astype(np.float32) - zp.astype(np.float32)) * scale.astype(np.float32), dql.input[0]


def dequantize(model):
    """Rewrites every MatMulInteger chain of `model` in place; returns how many there were."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output if o}
    users = {}
    for n in graph.node:
        for name in set(n.input):
            if name:
                users.setdefault(name, []).append(n)
    outputs = {o.name for o in graph.output}
    taken = set(inits) | set(producers) | {i.name for i in graph.input}

    replaced = {}  # id of the final Mul -> the MatMul taking its place
    weights = []
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        where = node.name or node.output[0]
        dql = producers.get(node.input[0])
        check(dql is not None and dql.op_type == "DynamicQuantizeLinear" and dql.output[0] == node.input[0],
              f"{where}: the activation does not come from a DynamicQuantizeLinear")
        check(node.output[0] not in outputs, f"{where}: its integer result is a graph output")
        cast = single_user(users, node.output[0], "Cast", where)
        to = next((a.i for a in cast.attribute if a.name == "to"), None)
        check(to == onnx.TensorProto.FLOAT, f"{where}: the result is cast to type {to}, not float")
        check(cast.output[0] not in outputs, f"{where}: the cast result is a graph output")
        mul = single_user(users, cast.output[0], "Mul", where)
        check(len(mul.input) == 2 and mul.input[0] != mul.input[1], f"{where}: the final Mul is not cast * scale")
        combined = mul.input[1] if mul.input[0] == cast.output[0] else mul.input[0]
        scale_mul = producers.get(combined)
        check(scale_mul is not None and scale_mul.op_type == "Mul" and dql.output[1] in scale_mul.input,
              f"{where}: the final Mul's scale is not Mul(x_scale, w_scale)")
        scale_source = scale_mul.input[1] if scale_mul.input[0] == dql.output[1] else scale_mul.input[0]
        w, x = float_weight(node, dql, scale_source, inits, producers, outputs)

        # The export's own name for the weight (Optimum appends "_quantized"), when it is free.
        name = node.input[1][: -len("_quantized")] if node.input[1].endswith("_quantized") else node.input[1] + "_float"
        base, k = name, 1
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        weights.append(numpy_helper.from_array(w.astype(np.float32), name))
        node_name = node.name[: -len("_quant")] if node.name.endswith("_quant") else node.name
        replaced[id(mul)] = helper.make_node("MatMul", [x, name], [mul.output[0]], name=node_name)
    check(replaced, "no MatMulInteger chain found: is this Moonshine's quantized encoder?")

    # The MatMul takes the final Mul's place (x is computed before it), then everything that no
    # longer reaches an output goes: the MatMulIntegers, Casts, scale Muls and quantizers.
    kept = keep_reaching_outputs(graph, [replaced.get(id(n), n) for n in graph.node], weights)
    left = sorted({n.op_type for n in kept} & {"DynamicQuantizeLinear", "MatMulInteger"})
    check(not left, f"{', '.join(left)} still in use after the rewrite: some chain has another consumer")
    return len(replaced)


def keep_reaching_outputs(graph, nodes, added):
    """Sets the graph's nodes to those of `nodes` (in order) that something reaching a graph
    output reads, its initializers to the old ones and `added` that are still read, and drops
    value_info of what is no longer computed; returns the nodes kept."""
    needed = {o.name for o in graph.output}
    kept = []
    for n in reversed(nodes):
        if any(o in needed for o in n.output):
            kept.append(n)
            needed.update(i for i in n.input if i)
    kept.reverse()
    del graph.node[:]
    graph.node.extend(kept)
    remaining = [t for t in list(graph.initializer) + list(added) if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(remaining)
    produced = {o for n in kept for o in n.output}
    info = [v for v in graph.value_info if v.name in produced]
    del graph.value_info[:]
    graph.value_info.extend(info)
    return kept


# Ops of the weight decompressions the export left in the graph, evaluated here.
FOLDED = {"Cast": None, "Mul": np.multiply, "Add": np.add, "Sub": np.subtract}


def fold_weights(model):
    """Replaces each Conv weight the graph computes from initializers alone (the export stores
    the convolutions' weights as int8 and decompresses them with Cast, Mul and Add nodes) by a
    float initializer of the same name, as a float model stores it; returns how many."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producers = {o: n for n in graph.node for o in n.output if o}

    def value(name, where):
        if name in inits:
            return numpy_helper.to_array(inits[name])
        n = producers.get(name)
        check(n is not None and n.op_type in FOLDED and len(n.output) == 1,
              f"{where}: {name} is neither an initializer nor computed from them by {'/'.join(FOLDED)}")
        if n.op_type == "Cast":
            to = next((a.i for a in n.attribute if a.name == "to"), None)
            check(to == onnx.TensorProto.FLOAT, f"{where}: {name} is cast to type {to}, not float")
            return value(n.input[0], where).astype(np.float32)
        check(len(n.input) == 2, f"{where}: {n.op_type} {name} has {len(n.input)} inputs")
        return FOLDED[n.op_type](value(n.input[0], where), value(n.input[1], where)).astype(np.float32)

    folded = []
    for node in graph.node:
        if node.op_type == "Conv" and node.input[1] not in inits:
            where = node.name or node.output[0]
            w = value(node.input[1], where)
            check(w.dtype == np.float32 and w.ndim >= 3, f"{where}: the weight is {w.dtype} {list(w.shape)}")
            folded.append(numpy_helper.from_array(w, node.input[1]))
    # The nodes that computed the weights go, and what only they read.
    weights = {t.name for t in folded}
    keep_reaching_outputs(graph, [n for n in graph.node if not (len(n.output) == 1 and n.output[0] in weights)], folded)
    return len(folded)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: bench/make_float_moonshine.py SRC DST")
    src, dst = sys.argv[1:3]
    me = os.path.basename(sys.argv[0])
    try:
        model = onnx.load(src)
        count = dequantize(model)  # (onnx 1.12's checker refuses the export's IR version)
        convs = fold_weights(model)
    except Unexpected as e:
        print(f"{me}: {src}: {e}", file=sys.stderr)
        sys.exit(1)
    except (OSError, DecodeError) as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        print(f"{me}: {src}: {first}", file=sys.stderr)
        sys.exit(1)
    onnx.save(model, dst)
    print(f"{dst}: {count} MatMulInteger chains as float MatMuls, {convs} Conv weights as float initializers")


if __name__ == "__main__":
    main()
