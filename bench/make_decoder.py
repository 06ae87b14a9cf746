#!/usr/bin/python3
"""A Llama-style decoder as ONNX exporters write it, with random weights from a seed.

    make_decoder.py OUT.onnx [--form decomposed|fused|microsoft] [--layers N] [--hidden H]
                    [--heads N] [--kv-heads N] [--intermediate I] [--vocab V] [--max-positions P]
                    [--tied] [--seed S] [--inline]

The architecture: token embedding, per layer RMSNorm, rotary position embeddings (the halves
rotated, as Llama does), grouped-query attention over a KV cache given as inputs and returned as
present outputs, a residual, RMSNorm and a SwiGLU MLP, and a final RMSNorm and LM head (tied to
the embedding with --tied). Inputs: input_ids int64 [batch, seq], attention_mask int64
[batch, past + seq] (1 for a token, 0 for padding), position_ids int64 [batch, seq] and
past_key_values.L.key/.value float32 [batch, kv_heads, past, head_dim]; outputs: logits float32
[batch, seq, vocab] and present.L.key/.value [batch, kv_heads, past + seq, head_dim].

The three forms compute the same function from the same weights (the seed):
  decomposed  opset 17, the ops torch.onnx's TorchScript exporter writes: Pow/ReduceMean/Sqrt
              for RMSNorm, Slice/Neg/Concat for the rotation, Expand/Reshape to repeat the KV
              heads, MatMul/Softmax for attention, the causal and padding mask built in the graph.
  fused       opset 23: RMSNormalization, RotaryEmbedding and Attention (with past_key/value and
              an additive mask), the form a fusing optimizer or a recent exporter writes.
  microsoft   onnxruntime-genai's form: com.microsoft GroupQueryAttention (rotary inside, from
              cos/sin caches), SimplifiedLayerNormalization and SkipSimplifiedLayerNormalization
              (the residual additions inside), seqlens_k and total_sequence_length computed from
              attention_mask. GroupQueryAttention takes no padding inside a sequence: the
              attention_mask must be ones on the left of each row's tokens (right padding).
Weights are written as external data (OUT.onnx.data) unless --inline; a 1.1B-parameter model
(--layers 22 --hidden 2048 --heads 32 --kv-heads 4 --intermediate 5632 --vocab 32000) is 4.4 GB.
Prints the parameter count. Uses Debian's python3-onnx and python3-numpy.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"


class Graph:
    """Nodes, initializers and fresh names for one model."""

    def __init__(self):
        self.nodes, self.inits, self.count = [], [], {}

    def name(self, base):
        n = self.count.get(base, 0)
        self.count[base] = n + 1
        return f"{base}_{n}"

    def op(self, op_type, inputs, outputs=1, domain="", base=None, **attrs):
        base = base or op_type.lower()
        outs = [self.name(base) for _ in range(outputs)] if isinstance(outputs, int) else outputs
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name("n_" + base), domain=domain,
                                           **attrs))
        return outs[0] if len(outs) == 1 else outs

    def const(self, array, base="c"):
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name, array):
        self.inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name


def rotary_caches(max_positions, head_dim, theta=10000.0):
    """cos and sin [max_positions, head_dim / 2]: position p, frequency theta^(-2i/head_dim)."""
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(max_positions, dtype=np.float64), inv)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def make_weights(a, rng):
    """Every weight by name, drawn in one fixed order so that the three forms share them."""
    d = a.hidden // a.heads
    std = 0.02 * (a.hidden / 64) ** -0.25  # keeps activations of order 1 at any width
    w = {"embed": rng.normal(0, 1.0, (a.vocab, a.hidden))}
    for layer in range(a.layers):
        p = f"layers.{layer}."
        w[p + "input_norm"] = 1.0 + rng.normal(0, 0.1, a.hidden)
        w[p + "q"] = rng.normal(0, std * 4, (a.hidden, a.heads * d))
        w[p + "k"] = rng.normal(0, std * 4, (a.hidden, a.kv_heads * d))
        w[p + "v"] = rng.normal(0, std * 4, (a.hidden, a.kv_heads * d))
        w[p + "o"] = rng.normal(0, std, (a.heads * d, a.hidden))
        w[p + "post_norm"] = 1.0 + rng.normal(0, 0.1, a.hidden)
        w[p + "gate"] = rng.normal(0, std * 4, (a.hidden, a.intermediate))
        w[p + "up"] = rng.normal(0, std * 4, (a.hidden, a.intermediate))
        w[p + "down"] = rng.normal(0, std, (a.intermediate, a.hidden))
    w["final_norm"] = 1.0 + rng.normal(0, 0.1, a.hidden)
    if not a.tied:
        w["lm_head"] = rng.normal(0, std, (a.hidden, a.vocab))
    return w


EPS = 1e-5


def rms_norm(g, x, scale, a):
    if a.form == "fused":
        return g.op("RMSNormalization", [x, scale], base="rmsnorm", axis=-1, epsilon=EPS)
    if a.form == "microsoft":
        return g.op("SimplifiedLayerNormalization", [x, scale], base="rmsnorm", axis=-1, epsilon=EPS)
    sq = g.op("Pow", [x, g.const(np.float32(2.0))])
    mean = g.op("ReduceMean", [sq], axes=[-1], keepdims=1)
    root = g.op("Sqrt", [g.op("Add", [mean, g.const(np.float32(EPS))])])
    return g.op("Mul", [g.op("Div", [x, root]), scale])


def skip_rms_norm(g, x, residual, scale):
    """com.microsoft SkipSimplifiedLayerNormalization: (RMSNorm(x + residual), x + residual)."""
    normed, total = g.name("rmsnorm"), g.name("residual")
    g.op("SkipSimplifiedLayerNormalization", [x, residual, scale], [normed, "", "", total], domain=MS,
         base="skip_rmsnorm", epsilon=EPS)
    return normed, total


def heads_first(g, x, n, d):
    """[B, S, n*d] -> [B, n, S, d]"""
    r = g.op("Reshape", [x, g.const(np.array([0, 0, n, d], np.int64))])
    return g.op("Transpose", [r], perm=[0, 2, 1, 3])


def rotate(g, x, cos, sin, d):
    """Llama's rotation of [B, n, S, d] with cos/sin [B, 1, S, d] (each half's angles twice)."""
    half = d // 2
    x1 = g.op("Slice", [x, g.const(np.array([0], np.int64)), g.const(np.array([half], np.int64)),
                        g.const(np.array([-1], np.int64))])
    x2 = g.op("Slice", [x, g.const(np.array([half], np.int64)), g.const(np.array([d], np.int64)),
                        g.const(np.array([-1], np.int64))])
    rotated = g.op("Concat", [g.op("Neg", [x2]), x1], axis=-1)
    return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [rotated, sin])])


def attention_mask_bias(g):
    """The additive mask [B, 1, S, T] of the decomposed and fused forms: a query at absolute
    position past + i sees key j when j <= past + i and attention_mask[b, j] is 1."""
    total = g.op("Gather", [g.op("Shape", ["attention_mask"]), g.const(np.int64(1))], axis=0)
    seq = g.op("Gather", [g.op("Shape", ["input_ids"]), g.const(np.int64(1))], axis=0)
    past = g.op("Sub", [total, seq])
    q_pos = g.op("Range", [past, total, g.const(np.int64(1))])
    k_pos = g.op("Range", [g.const(np.int64(0)), total, g.const(np.int64(1))])
    causal = g.op("LessOrEqual", [g.op("Unsqueeze", [k_pos, g.const(np.array([0], np.int64))]),
                                  g.op("Unsqueeze", [q_pos, g.const(np.array([1], np.int64))])])  # [S, T]
    keep = g.op("Cast", [g.op("Unsqueeze", ["attention_mask", g.const(np.array([1, 2], np.int64))])],
                to=TensorProto.BOOL)  # [B, 1, 1, T]
    allowed = g.op("And", [causal, keep])  # [B, 1, S, T]
    return g.op("Where", [allowed, g.const(np.float32(0.0)), g.const(np.float32(np.finfo(np.float32).min))],
                base="mask_bias")


def decoder_layer(g, a, layer, h, ctx):
    """One layer on the hidden state h [B, S, hidden]; returns the new hidden state."""
    d, p = a.hidden // a.heads, f"layers.{layer}."
    past_k, past_v = f"past_key_values.{layer}.key", f"past_key_values.{layer}.value"
    present_k, present_v = f"present.{layer}.key", f"present.{layer}.value"
    if a.form == "microsoft":
        x = ctx["normed"]
    else:
        x = rms_norm(g, h, p + "input_norm", a)
    q = g.op("MatMul", [x, p + "q"], base="q")
    k = g.op("MatMul", [x, p + "k"], base="k")
    v = g.op("MatMul", [x, p + "v"], base="v")
    if a.form == "microsoft":
        attn = g.op("GroupQueryAttention", [q, k, v, past_k, past_v, ctx["seqlens_k"], ctx["total_len"],
                                            "cos_cache", "sin_cache"],
                    [g.name("attn"), present_k, present_v], domain=MS, num_heads=a.heads, kv_num_heads=a.kv_heads,
                    do_rotary=1, rotary_interleaved=0, scale=float(d ** -0.5))[0]
    else:
        qh, kh, vh = heads_first(g, q, a.heads, d), heads_first(g, k, a.kv_heads, d), heads_first(g, v, a.kv_heads, d)
        if a.form == "fused":
            qh = g.op("RotaryEmbedding", [qh, "cos_cache", "sin_cache", "position_ids"], base="rope", interleaved=0)
            kh = g.op("RotaryEmbedding", [kh, "cos_cache", "sin_cache", "position_ids"], base="rope", interleaved=0)
            y = g.op("Attention", [qh, kh, vh, ctx["bias"], past_k, past_v], [g.name("attn4"), present_k, present_v],
                     scale=float(d ** -0.5))[0]
        else:
            qh, kh = rotate(g, qh, ctx["cos"], ctx["sin"], d), rotate(g, kh, ctx["cos"], ctx["sin"], d)
            g.op("Concat", [past_k, kh], [present_k], axis=2)
            g.op("Concat", [past_v, vh], [present_v], axis=2)
            keys, values = present_k, present_v
            if a.heads != a.kv_heads:  # repeat each KV head for its group of query heads
                rep = a.heads // a.kv_heads
                keys, values = (g.op("Reshape", [g.op("Expand", [g.op("Unsqueeze", [t, g.const(np.array([2], np.int64))]),
                                                                  ctx["expand_shape"]]),
                                                 g.const(np.array([0, a.heads, -1, d], np.int64))])
                                for t in (keys, values))
            scores = g.op("MatMul", [qh, g.op("Transpose", [keys], perm=[0, 1, 3, 2])])
            scores = g.op("Add", [g.op("Div", [scores, g.const(np.float32(np.sqrt(d)))]), ctx["bias"]])
            y = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), values])
        attn = g.op("Reshape", [g.op("Transpose", [y], perm=[0, 2, 1, 3]), g.const(np.array([0, 0, -1], np.int64))])
    o = g.op("MatMul", [attn, p + "o"], base="o")
    if a.form == "microsoft":
        # the residual added inside: (normed for the MLP, the sum for the next residual)
        normed, h = skip_rms_norm(g, o, h, p + "post_norm")
    else:
        h = g.op("Add", [h, o], base="residual")
        normed = rms_norm(g, h, p + "post_norm", a)
    gate = g.op("MatMul", [normed, p + "gate"], base="gate")
    up = g.op("MatMul", [normed, p + "up"], base="up")
    act = g.op("Mul", [gate, g.op("Sigmoid", [gate])], base="silu")
    down = g.op("MatMul", [g.op("Mul", [act, up]), p + "down"], base="down")
    if a.form == "microsoft":
        # the next layer's input norm takes this residual
        scale = f"layers.{layer + 1}.input_norm" if layer + 1 < a.layers else "final_norm"
        ctx["normed"], h = skip_rms_norm(g, down, h, scale)
        return h
    return g.op("Add", [h, down], base="residual")


def build(a):
    rng = np.random.default_rng(a.seed)
    d = a.hidden // a.heads
    g = Graph()
    weights = make_weights(a, rng)
    for name, array in weights.items():
        g.weight(name, array)
    cos, sin = rotary_caches(a.max_positions, d)
    g.weight("cos_cache", cos)
    g.weight("sin_cache", sin)

    h = g.op("Gather", ["embed", "input_ids"], base="embedded")
    ctx = {}
    if a.form == "microsoft":
        lengths = g.op("ReduceSum", ["attention_mask", g.const(np.array([1], np.int64))], keepdims=0)
        ctx["seqlens_k"] = g.op("Cast", [g.op("Sub", [lengths, g.const(np.int64(1))])], to=TensorProto.INT32,
                                base="seqlens_k")
        total = g.op("Gather", [g.op("Shape", ["attention_mask"]), g.const(np.int64(1))], axis=0)
        ctx["total_len"] = g.op("Cast", [total], to=TensorProto.INT32, base="total_sequence_length")
        ctx["normed"] = g.op("SimplifiedLayerNormalization", [h, "layers.0.input_norm"], base="rmsnorm", axis=-1,
                             epsilon=EPS)
    else:
        ctx["bias"] = attention_mask_bias(g)
    if a.form == "decomposed":
        # cos/sin [B, 1, S, d]: the cache rows of each position, each half's angles twice
        for name, cache in (("cos", "cos_cache"), ("sin", "sin_cache")):
            rows = g.op("Gather", [cache, "position_ids"], axis=0)  # [B, S, d/2]
            ctx[name] = g.op("Unsqueeze", [g.op("Concat", [rows, rows], axis=-1), g.const(np.array([1], np.int64))],
                             base=name)
        if a.heads != a.kv_heads:
            shape = g.op("Shape", ["past_key_values.0.key"])
            ctx["expand_shape"] = g.op("Concat", [g.op("Slice", [shape, g.const(np.array([0], np.int64)),
                                                                 g.const(np.array([2], np.int64))]),
                                                  g.const(np.array([a.heads // a.kv_heads, 1, 1], np.int64))], axis=0)
    for layer in range(a.layers):
        h = decoder_layer(g, a, layer, h, ctx)
    final = ctx["normed"] if a.form == "microsoft" else rms_norm(g, h, "final_norm", a)
    head = g.op("Transpose", ["embed"], perm=[1, 0], base="lm_head") if a.tied else "lm_head"
    g.op("MatMul", [final, head], ["logits"])

    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    inputs = [helper.make_tensor_value_info("input_ids", i64, ["batch", "sequence"]),
              helper.make_tensor_value_info("attention_mask", i64, ["batch", "total_sequence"])]
    if a.form != "microsoft":
        inputs.append(helper.make_tensor_value_info("position_ids", i64, ["batch", "sequence"]))
    outputs = [helper.make_tensor_value_info("logits", f32, ["batch", "sequence", a.vocab])]
    for layer in range(a.layers):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{layer}.{kind}", f32,
                                                        ["batch", a.kv_heads, "past_sequence", d]))
            outputs.append(helper.make_tensor_value_info(f"present.{layer}.{kind}", f32,
                                                         ["batch", a.kv_heads, "total_sequence", d]))
    graph = helper.make_graph(g.nodes, f"llama_{a.form}", inputs, outputs, g.inits)
    opsets = [helper.make_opsetid("", 23 if a.form == "fused" else 17)]
    if a.form == "microsoft":
        opsets.append(helper.make_opsetid(MS, 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="onnxtool bench/make_decoder.py")
    model.ir_version = 10 if a.form == "fused" else 8
    params = sum(w.size for w in weights.values())
    return model, params


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--form", choices=["decomposed", "fused", "microsoft"], default="decomposed")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--intermediate", type=int, default=0, help="default: 8/3 of hidden, rounded up to 32")
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--max-positions", type=int, default=256)
    p.add_argument("--tied", action="store_true", help="the LM head is the embedding transposed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--inline", action="store_true", help="weights inside the .onnx file (< 2 GB only)")
    a = p.parse_args()
    if a.hidden % a.heads or a.heads % a.kv_heads or (a.hidden // a.heads) % 2:
        sys.exit("make_decoder.py: --hidden must split into --heads of an even size, and --heads into --kv-heads groups")
    a.intermediate = a.intermediate or -(-a.hidden * 8 // 3 // 32) * 32
    model, params = build(a)
    if a.inline:
        onnx.save(model, a.out)
    else:
        data = os.path.basename(a.out) + ".data"
        data_path = os.path.join(os.path.dirname(os.path.abspath(a.out)), data)
        if os.path.exists(data_path):  # onnx.save appends to an existing data file
            os.remove(data_path)
        onnx.save(model, a.out, save_as_external_data=True, all_tensors_to_one_file=True, location=data,
                  size_threshold=1024)
    print(f"{a.out}: {a.form}, {a.layers} layers, hidden {a.hidden}, {a.heads} heads ({a.kv_heads} KV), "
          f"intermediate {a.intermediate}, vocab {a.vocab}: {params:,} parameters")


if __name__ == "__main__":
    main()
