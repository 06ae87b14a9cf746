#!/usr/bin/python3
"""onnxruntime's com.microsoft transformer ops that onnxtool runs
(runner/cpu/contrib_transformer.cpp, and the fused attention ops of
runner/cpu/contrib_attention.cpp) against onnxruntime-node, on one-node models over a grid of
attributes and inputs.

Each case is a model written here with python3-onnx and seeded random inputs; onnxruntime runs
them all in one process (graph optimizations disabled, so that it runs the node as written) and
onnxtool runs each one. float32 outputs must agree within rtol 1e-3 / atol 1e-5; float16 ones
within rtol 2e-3 / atol 1e-3 (both sides compute in float32 and round once, so a result can
land one float16 step apart). BiasAdd and BiasSoftmax have no CPU kernel in onnxruntime: their
cases are judged by numpy instead (in float64, rounded once). Exits 1 on any mismatch or
onnxtool failure.

Usage: contrib_transformer_vs_ort.py ONNXTOOL SOURCE_DIR CACHE_DIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

from ort_util import SanitizerSample, finish, judge_outputs, judge_setup, ort_batch, work_dir

onnxtool, source_dir, cache_dir, ort_run, env = judge_setup(sys.argv)
work = work_dir("onnxtool_contrib_transformer.")
rng = np.random.default_rng(0)
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
        np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.float64): TensorProto.DOUBLE}
cases = []  # (name, model path, {input: npy}, numpy outputs or None, float16 tolerance)
SAMPLE = SanitizerSample()


def floats(*shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, shape).astype(dtype)


def case(name, op, inputs, attrs=None, outputs=("y0",), out_types=None, numpy_ref=None):
    """One node `op` of com.microsoft over `inputs` [(name, array or None for omitted)]: arrays
    named as graph inputs, omitted ones as ''. `outputs` names the node's outputs ('' for an
    omitted one), `out_types` their element types (float32 by default)."""
    if not SAMPLE.keep(op):
        return
    d = os.path.join(work, name)
    os.makedirs(d)
    names, graph_inputs, files = [], [], {}
    half = False
    for n, a in inputs:
        if a is None:
            names.append("")
            continue
        half = half or a.dtype == np.float16
        names.append(n)
        graph_inputs.append(helper.make_tensor_value_info(n, ELEM[a.dtype], list(a.shape)))
        files[n] = os.path.join(d, n + ".npy")
        np.save(files[n], a)
    out_types = out_types or [TensorProto.FLOAT16 if half else TensorProto.FLOAT] * len(outputs)
    node = helper.make_node(op, names, list(outputs), domain="com.microsoft", **(attrs or {}))
    graph = helper.make_graph([node], name, graph_inputs,
                              [helper.make_tensor_value_info(o, t, None) for o, t in zip(outputs, out_types) if o])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    cases.append((name, path, files, numpy_ref, half))


# SkipLayerNormalization: skip of input's shape, [1, S, H] and [S, H]; with and without beta
# and bias; the optional input_skip_bias_sum output; epsilon; a 2-D input; float16.
for skip_shape in ((2, 5, 32), (1, 5, 32), (5, 32)):
    for beta in (False, True):
        for bias in (False, True):
            tag = f"skip{'x'.join(map(str, skip_shape))}{'_beta' if beta else ''}{'_bias' if bias else ''}"
            case(f"SkipLayerNormalization_{tag}", "SkipLayerNormalization",
                 [("input", floats(2, 5, 32)), ("skip", floats(*skip_shape)), ("gamma", floats(32, lo=0.5, hi=1.5)),
                  ("beta", floats(32) if beta else None), ("bias", floats(32) if bias else None)],
                 {"epsilon": 1e-5}, outputs=("y0", "", "", "y3"))
case("SkipLayerNormalization_default_eps", "SkipLayerNormalization",
     [("input", floats(3, 4, 48)), ("skip", floats(3, 4, 48)), ("gamma", floats(48)), ("beta", floats(48))])
case("SkipLayerNormalization_eps_large", "SkipLayerNormalization",
     [("input", floats(1, 3, 16, lo=-0.1, hi=0.1)), ("skip", floats(1, 3, 16, lo=-0.1, hi=0.1)), ("gamma", floats(16))],
     {"epsilon": 0.1})
case("SkipLayerNormalization_2d", "SkipLayerNormalization",
     [("input", floats(7, 64)), ("skip", floats(7, 64)), ("gamma", floats(64)), ("beta", floats(64)), ("bias", floats(64))],
     {"epsilon": 1e-6}, outputs=("y0", "", "", "y3"))
case("SkipLayerNormalization_f16", "SkipLayerNormalization",
     [("input", floats(2, 3, 40, dtype=np.float16)), ("skip", floats(2, 3, 40, dtype=np.float16)),
      ("gamma", floats(40, dtype=np.float16)), ("beta", floats(40, dtype=np.float16)), ("bias", floats(40, dtype=np.float16))],
     {"epsilon": 1e-5}, outputs=("y0", "", "", "y3"))

# SkipSimplifiedLayerNormalization: the RMS form, with and without bias and the sum output.
for skip_shape in ((2, 6, 24), (1, 6, 24), (6, 24)):
    for bias in (False, True):
        case(f"SkipSimplifiedLayerNormalization_skip{'x'.join(map(str, skip_shape))}{'_bias' if bias else ''}",
             "SkipSimplifiedLayerNormalization",
             [("input", floats(2, 6, 24)), ("skip", floats(*skip_shape)), ("gamma", floats(24)),
              ("bias", floats(24) if bias else None)], {"epsilon": 1e-6}, outputs=("y0", "", "", "y3"))
case("SkipSimplifiedLayerNormalization_2d", "SkipSimplifiedLayerNormalization",
     [("input", floats(9, 128)), ("skip", floats(9, 128)), ("gamma", floats(128))], {"epsilon": 1e-5})
case("SkipSimplifiedLayerNormalization_f16", "SkipSimplifiedLayerNormalization",
     [("input", floats(2, 4, 32, dtype=np.float16)), ("skip", floats(2, 4, 32, dtype=np.float16)),
      ("gamma", floats(32, dtype=np.float16)), ("bias", floats(32, dtype=np.float16))],
     {"epsilon": 1e-5}, outputs=("y0", "", "", "y3"))

# BiasAdd (numpy: onnxruntime runs it on CUDA only).
for dt in (np.float32, np.float16):
    x, b, s = floats(2, 9, 320, dtype=dt), floats(320, dtype=dt), floats(2, 9, 320, dtype=dt)
    ref = (x.astype(np.float32) + b.astype(np.float32) + s.astype(np.float32)).astype(dt)
    case(f"BiasAdd_{np.dtype(dt).name}", "BiasAdd", [("X", x), ("bias", b), ("skip", s)], numpy_ref={"y0": ref})


# BiasSoftmax (numpy: onnxruntime runs it on CUDA only): a bias shared by the rows of inner axes
# (is_inner_broadcast) or repeated over the outer ones, axis from 1 to the last.
def softmax_ref(x, bias, axis):
    v = (x.astype(np.float64) + bias.astype(np.float64))
    flat = v.reshape(int(np.prod(v.shape[:axis])), -1)
    e = np.exp(flat - flat.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(v.shape)


for dt in (np.float32, np.float16):
    for axis, inner, bias_shape in ((3, 1, (2, 1, 1, 7)), (3, 0, (1, 3, 4, 7)), (2, 1, (2, 1, 4, 7)), (2, 0, (1, 3, 4, 7)),
                                    (1, 1, (2, 3, 4, 7)), (-1, 1, (2, 3, 1, 7)), (3, 0, (1, 1, 1, 7))):
        x, b = floats(2, 3, 4, 7, lo=-4, hi=4, dtype=dt), floats(*bias_shape, lo=-2, hi=2, dtype=dt)
        case(f"BiasSoftmax_{np.dtype(dt).name}_axis{axis}_{'inner' if inner else 'outer'}_bias{'x'.join(map(str, bias_shape))}",
             "BiasSoftmax", [("data", x), ("bias", b)], {"axis": axis, "is_inner_broadcast": inner},
             numpy_ref={"y0": softmax_ref(x, b, axis % 4).astype(dt)})

# MatMulNBits: weights quantized here the way onnxruntime's tools store them (values packed from
# the low bits up, per-block scales, zero points packed per column with padding).
def quantize_nbits(w, bits, block, zp_mode):
    """w [K, N] -> (B [N, k_blocks, blob] uint8, scales [N * k_blocks], zero points or None)."""
    k, n = w.shape
    blocks = (k + block - 1) // block
    padded = np.zeros((blocks * block, n), np.float32)
    padded[:k] = w
    wb = padded.T.reshape(n, blocks, block)
    qmax = (1 << bits) - 1
    lo, hi = np.minimum(wb.min(axis=2), 0), np.maximum(wb.max(axis=2), 0)
    scale = np.maximum((hi - lo) / qmax, 1e-6).astype(np.float32)
    if zp_mode == "none":
        zero = np.full((n, blocks), 1 << (bits - 1), np.int64)
    else:
        zero = np.clip(np.round(-lo / scale), 0, qmax).astype(np.int64)
    q = np.clip(np.round(wb / scale[:, :, None]) + zero[:, :, None], 0, qmax).astype(np.uint8)
    if bits == 4:
        packed = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
    else:
        packed = q
    zp = None
    if zp_mode == "packed":
        if bits == 4:
            zz = np.zeros((n, blocks + (blocks % 2)), np.uint8)
            zz[:, :blocks] = zero
            zp = (zz[:, 0::2] | (zz[:, 1::2] << 4)).astype(np.uint8).reshape(-1)
        else:
            zp = zero.astype(np.uint8).reshape(-1)
    elif zp_mode == "float":
        zp = zero.astype(np.float32).reshape(-1)
    return packed, scale.reshape(-1), zp


for bits in (4, 8):
    for block in (16, 32, 64, 128):
        for zp_mode in ("none", "packed", "float"):
            if zp_mode == "float" and bits != 4:
                continue  # onnxruntime's CPU kernel takes float zero points with 4 bits only
            for k, a_shape in ((block * 3, (5,)), (block * 2 + 7, (2, 3))):
                n = 12
                packed, scales, zp = quantize_nbits(floats(k, n), bits, block, zp_mode)
                bias = zp_mode == "packed" and len(a_shape) == 2
                case(f"MatMulNBits_b{bits}_bs{block}_zp{zp_mode}_k{k}_a{'x'.join(map(str, a_shape))}{'_bias' if bias else ''}",
                     "MatMulNBits",
                     [("A", floats(*a_shape, k)), ("B", packed), ("scales", scales), ("zero_points", zp), ("g_idx", None),
                      ("bias", floats(n) if bias else None)],
                     {"K": k, "N": n, "bits": bits, "block_size": block})
for block in (16, 256):
    packed, scales, zp = quantize_nbits(floats(block * 2, 9), 4, block, "packed")
    case(f"MatMulNBits_b4_bs{block}_batched", "MatMulNBits",
         [("A", floats(2, 2, 3, block * 2)), ("B", packed), ("scales", scales), ("zero_points", zp)],
         {"K": block * 2, "N": 9, "bits": 4, "block_size": block})
packed, scales, zp = quantize_nbits(floats(64, 10), 4, 32, "packed")
case("MatMulNBits_f16", "MatMulNBits",
     [("A", floats(3, 64, dtype=np.float16)), ("B", packed), ("scales", scales.astype(np.float16)), ("zero_points", zp)],
     {"K": 64, "N": 10, "bits": 4, "block_size": 32})


# RotaryEmbedding: 3-D and 4-D inputs, interleaved or not, one start position or per-token
# positions, a partial rotary_embedding_dim, float16.
def rope_caches(max_pos, half, dtype=np.float32):
    inv = 1.0 / (10000 ** (np.arange(half) / half))
    ang = np.arange(max_pos)[:, None] * inv[None, :]
    return np.cos(ang).astype(dtype), np.sin(ang).astype(dtype)


for interleaved in (0, 1):
    for layout in ("bsh", "bnsh"):
        for pos_form in ("start", "per_token"):
            batch, seq, heads, head = 2, 5, 3, 16
            x = floats(batch, seq, heads * head) if layout == "bsh" else floats(batch, heads, seq, head)
            pos = (np.array([3], np.int64) if pos_form == "start"
                   else rng.integers(0, 20, (batch, seq)).astype(np.int64))
            cos, sin = rope_caches(24, head // 2)
            case(f"RotaryEmbedding_i{interleaved}_{layout}_{pos_form}", "RotaryEmbedding",
                 [("input", x), ("position_ids", pos), ("cos_cache", cos), ("sin_cache", sin)], {"interleaved": interleaved})
for interleaved in (0, 1):
    cos, sin = rope_caches(16, 4)
    case(f"RotaryEmbedding_partial_i{interleaved}", "RotaryEmbedding",
         [("input", floats(1, 6, 4 * 32)), ("position_ids", np.array([2], np.int64)), ("cos_cache", cos), ("sin_cache", sin)],
         {"interleaved": interleaved, "num_heads": 4, "rotary_embedding_dim": 8})
cos, sin = rope_caches(12, 8, np.float16)
case("RotaryEmbedding_f16", "RotaryEmbedding",
     [("input", floats(2, 4, 2 * 16, dtype=np.float16)), ("position_ids", np.array([0], np.int64)), ("cos_cache", cos),
      ("sin_cache", sin)])

# EmbedLayerNormalization: with and without segments, mask and position_ids (per batch and
# broadcast), the optional embedding_sum output.
for segments in (False, True):
    for mask in (False, True):
        for pos_form in ("none", "full", "broadcast"):
            batch, seq, hidden = 3, 7, 32
            ids = rng.integers(0, 50, (batch, seq)).astype(np.int32)
            seg_ids = rng.integers(0, 2, (batch, seq)).astype(np.int32) if segments else None
            m = (rng.random((batch, seq)) < 0.7).astype(np.int32) if mask else None
            pos = (None if pos_form == "none" else rng.integers(0, 16, (batch if pos_form == "full" else 1, seq)).astype(np.int32))
            case(f"EmbedLayerNormalization{'_seg' if segments else ''}{'_mask' if mask else ''}_pos{pos_form}",
                 "EmbedLayerNormalization",
                 [("input_ids", ids), ("segment_ids", seg_ids), ("word_embedding", floats(50, hidden)),
                  ("position_embedding", floats(16, hidden)), ("segment_embedding", floats(2, hidden) if segments else None),
                  ("gamma", floats(hidden)), ("beta", floats(hidden)), ("mask", m), ("position_ids", pos)],
                 {"epsilon": 1e-5}, outputs=("y0", "y1", "y2"),
                 out_types=[TensorProto.FLOAT, TensorProto.INT32, TensorProto.FLOAT])

# The contrib forms of standard ops: Range (delta given or not, scalars or [1]), ExpandDims
# (every axis of a rank-3 input), Trilu, GatherND (int32 and int64 indices), Inverse.
for dt, start, limit, delta in ((np.float32, 0.5, 7.0, 0.75), (np.int32, -3, 20, 4), (np.int64, 10, -5, -3),
                                (np.float64, 1.0, 2.0, None), (np.int64, 2, 9, None)):
    shape = () if delta is None or dt != np.int32 else (1,)
    ins = [("start", np.full(shape, start, dt)), ("limit", np.full(shape, limit, dt))]
    if delta is not None:
        ins.append(("delta", np.full(shape, delta, dt)))
    case(f"Range_{np.dtype(dt).name}{'' if delta is not None else '_nodelta'}{'_dims1' if shape else ''}", "Range", ins,
         out_types=[ELEM[np.dtype(dt)]])
for axis in range(-3, 4):
    case(f"ExpandDims_axis{axis}", "ExpandDims", [("X", floats(2, 3, 4)), ("axis", np.array(axis, np.int32))])
for dt in (np.float32, np.float64, np.int64):
    for upper in (0, 1):
        for k in (None, 0, 2, -1):
            x = (rng.integers(-9, 9, (2, 4, 5)) if dt == np.int64 else rng.uniform(-1, 1, (2, 4, 5))).astype(dt)
            ins = [("X", x)] + ([("k", np.array(k, np.int64))] if k is not None else [])
            case(f"Trilu_{np.dtype(dt).name}_upper{upper}_k{'none' if k is None else k}", "Trilu", ins, {"upper": upper},
                 out_types=[ELEM[np.dtype(dt)]])
for it in (np.int32, np.int64):
    data = floats(3, 4, 5)
    case(f"GatherND_{np.dtype(it).name}_k1", "GatherND", [("data", data), ("indices", np.array([[2], [0], [1]], it))])
    case(f"GatherND_{np.dtype(it).name}_k2", "GatherND",
         [("data", data), ("indices", np.array([[[0, 3], [2, 1]], [[1, 0], [2, -1]]], it))])
    case(f"GatherND_{np.dtype(it).name}_k3", "GatherND", [("data", data), ("indices", np.array([[0, 1, 2], [2, 3, 4]], it))])
for dt, shape in ((np.float32, (3, 3)), (np.float32, (2, 3, 5, 5)), (np.float64, (4, 4)), (np.float32, (1, 1))):
    n = shape[-1]
    x = (rng.uniform(-1, 1, shape) + n * np.eye(n)).astype(dt)
    case(f"Inverse_{np.dtype(dt).name}_{'x'.join(map(str, shape))}", "Inverse", [("X", x)], out_types=[ELEM[np.dtype(dt)]])


# The fused attention ops (runner/cpu/contrib_attention.cpp). Masks are int32; a "lengths" mask
# keeps at least one key per batch so that no row is all masked.
def key_mask(kind, batch, q_len, total):
    if kind == "lengths":
        return rng.integers(1, total + 1, (batch,)).astype(np.int32)
    if kind == "starts":
        ends = rng.integers(max(1, total // 2), total + 1, (batch,))
        return np.concatenate([ends, rng.integers(0, max(1, total // 2), (batch,))]).astype(np.int32)
    m = (rng.random((batch, total) if kind == "per_key" else (batch, q_len, total)) < 0.7).astype(np.int32)
    m[..., 0] = 1
    return m


# MultiHeadAttention: key and value [B, L, D] or split into heads [B, N, L, H]; bias; the key
# padding mask forms; attention_bias broadcast over batch and heads; past and present; causal;
# scale and mask_filter_value; a value hidden size of its own; the qk output.
def mha_case(tag, batch, q_len, kv_len, heads, head, v_head=None, kv="bsd", bias=False, mask=None, ab=None, past=0,
             causal=0, attrs=None, qk=False, dtype=np.float32):
    f = lambda *shape: floats(*shape, dtype=dtype)
    v_head = v_head or head
    d, dv = heads * head, heads * v_head
    total = past + kv_len
    if kv == "bsd":
        k, v = f(batch, kv_len, d), f(batch, kv_len, dv)
    else:
        k, v = f(batch, heads, kv_len, head), f(batch, heads, kv_len, head)
    ab_arr = None
    if ab:
        ab_arr = f(batch if ab[0] else 1, heads if ab[1] else 1, q_len, total)
    a = {"num_heads": heads, "unidirectional": causal}
    a.update(attrs or {})
    outputs = ["y0", "y1" if past else "", "y2" if past else ""] + (["y3"] if qk else [])
    case(f"MultiHeadAttention_{tag}", "MultiHeadAttention",
         [("query", f(batch, q_len, d)), ("key", k), ("value", v),
          ("bias", f(2 * d + dv) if bias else None),
          ("key_padding_mask", key_mask(mask, batch, q_len, total) if mask else None), ("attention_bias", ab_arr),
          ("past_key", f(batch, heads, past, head) if past else None),
          ("past_value", f(batch, heads, past, v_head) if past else None)],
         a, outputs=tuple(outputs))


for batch in (1, 2):
    for q_len, kv_len in ((1, 1), (4, 4), (3, 7)):
        for i, (heads, head) in enumerate(((1, 8), (2, 16), (4, 12), (2, 32))):
            bias = (i + q_len) % 2 == 0
            mha_case(f"b{batch}_s{q_len}_l{kv_len}_n{heads}_h{head}{'_bias' if bias else ''}", batch, q_len, kv_len,
                     heads, head, bias=bias)
for bias in (False, True):
    for mask in (None, "per_key"):
        mha_case(f"bnsh{'_bias' if bias else ''}{'_mask' if mask else ''}", 2, 3, 5, 2, 16, kv="bnsh", bias=bias, mask=mask)
for mask in ("lengths", "per_key", "per_query"):
    for causal in (0, 1):
        mha_case(f"mask_{mask}_causal{causal}", 2, 4, 6, 2, 8, mask=mask, causal=causal, bias=True)
for ab in ((1, 1), (0, 1), (1, 0), (0, 0)):
    mha_case(f"attention_bias_b{ab[0]}_n{ab[1]}", 2, 3, 5, 4, 8, ab=ab)
for past in (1, 3, 5):
    for causal in (0, 1):
        mha_case(f"past{past}_causal{causal}", 2, 1 if past == 5 else 3, 3, 2, 16, past=past, causal=causal, bias=True,
                 mask="per_key" if past == 3 else None)
mha_case("past_mask_ab", 2, 2, 2, 2, 12, past=4, causal=1, mask="lengths", ab=(1, 1))
mha_case("scale", 1, 3, 4, 2, 16, attrs={"scale": 0.3})
mha_case("mask_filter", 2, 3, 4, 2, 8, mask="per_key", attrs={"mask_filter_value": -1000.0})
mha_case("v_head", 2, 3, 4, 2, 16, v_head=8, bias=True)
mha_case("qk", 2, 3, 4, 2, 8, mask="per_key", ab=(1, 1), qk=True)
mha_case("f16", 2, 3, 5, 2, 16, bias=True, mask="per_key", dtype=np.float16)
mha_case("f16_past_causal", 2, 3, 3, 2, 16, past=2, causal=1, ab=(1, 1), dtype=np.float16)
mha_case("f16_bnsh", 1, 2, 4, 2, 8, kv="bnsh", dtype=np.float16)


# Attention (BERT's): the projection, qkv_hidden_sizes, the mask_index forms (a [B, 1]
# placeholder among them), past and present, attention_bias, causal, scale.
def bert_case(tag, batch, seq, heads, head, in_hidden=24, sizes=None, mask=None, past=0, ab=None, causal=0, attrs=None,
              dtype=np.float32):
    f = lambda *shape, **kw: floats(*shape, dtype=dtype, **kw)
    sizes = sizes or (heads * head,) * 3
    total = past + seq
    a = {"num_heads": heads, "unidirectional": causal}
    if sizes[2] != sizes[0]:
        a["qkv_hidden_sizes"] = list(sizes)
    a.update(attrs or {})
    m = None
    if mask == "dummy":
        m = np.ones((batch, 1), np.int32)
    elif mask:
        m = key_mask(mask, batch, seq, total)
    case(f"Attention_{tag}", "Attention",
         [("input", f(batch, seq, in_hidden)), ("weights", f(in_hidden, sum(sizes), lo=-0.5, hi=0.5)),
          ("bias", f(sum(sizes))), ("mask_index", m),
          ("past", f(2, batch, heads, past, head) if past else None),
          ("attention_bias", f(batch if ab[0] else 1, heads if ab[1] else 1, seq, total) if ab else None)],
         a, outputs=("y0", "y1") if past else ("y0",))


for batch in (1, 2):
    for seq in (1, 5):
        for heads, head in ((1, 8), (2, 16), (4, 12)):
            bert_case(f"b{batch}_s{seq}_n{heads}_h{head}", batch, seq, heads, head)
for mask in ("lengths", "starts", "per_key", "per_query", "dummy"):
    for causal in (0, 1):
        bert_case(f"mask_{mask}_causal{causal}", 2, 4, 2, 8, mask=mask, causal=causal)
for past in (2, 3):
    for causal in (0, 1):
        bert_case(f"past{past}_causal{causal}", 2, 1 if past == 3 else 3, 2, 8, past=past, causal=causal,
                  mask="per_key" if causal else None)
bert_case("qkv_hidden_sizes", 2, 3, 2, 8, sizes=(16, 16, 32))
bert_case("qkv_hidden_sizes_mask", 1, 4, 4, 4, sizes=(16, 16, 8), mask="lengths")
for ab in ((1, 1), (0, 1), (1, 0)):
    bert_case(f"attention_bias_b{ab[0]}_n{ab[1]}", 2, 3, 2, 8, ab=ab, mask="per_key" if ab == (1, 1) else None)
bert_case("scale_filter", 2, 3, 2, 8, mask="per_key", attrs={"scale": 0.5, "mask_filter_value": -500.0})
bert_case("f16", 2, 4, 2, 8, mask="lengths", dtype=np.float16)
bert_case("f16_past_causal", 2, 2, 2, 8, past=3, causal=1, dtype=np.float16)


# GroupQueryAttention: prompts and decoding steps (with a past buffer exactly as long as the
# past, or a larger shared buffer), per-batch lengths, group sizes 1, 2 and 4, packed QKV,
# rotary (interleaved or not, partial), softcap, local windows, smooth softmax, head sinks,
# attention_bias, scale, float16.
def gqa_case(tag, batch, q_len, heads, kv_heads, head, past_lens=None, cap=None, packed=False, rotary=None, attrs=None,
             dtype=np.float32, ab=None, sink=False, pos=None):
    past_lens = past_lens if past_lens is not None else [0] * batch
    lens = [p + q_len for p in past_lens]
    total = max(lens)
    cap = cap if cap is not None else max(past_lens)
    a = {"num_heads": heads, "kv_num_heads": kv_heads}
    a.update(attrs or {})
    ins = []
    if packed:
        ins += [("query", floats(batch, q_len, (heads + 2 * kv_heads) * head, dtype=dtype)), ("key", None), ("value", None)]
    else:
        ins += [("query", floats(batch, q_len, heads * head, dtype=dtype)),
                ("key", floats(batch, q_len, kv_heads * head, dtype=dtype)),
                ("value", floats(batch, q_len, kv_heads * head, dtype=dtype))]
    if cap:
        ins += [("past_key", floats(batch, kv_heads, cap, head, dtype=dtype)),
                ("past_value", floats(batch, kv_heads, cap, head, dtype=dtype))]
    else:
        ins += [("past_key", None), ("past_value", None)]
    ins += [("seqlens_k", np.array([n - 1 for n in lens], np.int32)), ("total_sequence_length", np.array(total, np.int32))]
    if rotary:
        interleaved, half = rotary
        a.update({"do_rotary": 1, "rotary_interleaved": interleaved})
        cos, sin = rope_caches(max(total, cap) + 2, half, dtype)
        ins += [("cos_cache", cos), ("sin_cache", sin)]
    if ab or sink or pos is not None:
        ins += [("cos_cache", None), ("sin_cache", None)] if not rotary else []
        ins += [("position_ids", pos),
                ("attention_bias", floats(batch if ab[0] else 1, heads if ab[1] else 1, q_len, total, dtype=dtype) if ab else None),
                ("head_sink", floats(heads, dtype=dtype) if sink else None)]
    case(f"GroupQueryAttention_{tag}", "GroupQueryAttention", ins, a, outputs=("y0", "y1", "y2"))


for batch in (1, 2):
    for q_len in (1, 4, 7):
        for heads, kv_heads, head in ((2, 2, 8), (4, 2, 16), (4, 1, 24), (2, 1, 32)):
            gqa_case(f"prompt_b{batch}_s{q_len}_n{heads}_kv{kv_heads}_h{head}", batch, q_len, heads, kv_heads, head)
for heads, kv_heads, head in ((2, 2, 16), (4, 2, 8), (4, 1, 32)):
    gqa_case(f"decode_n{heads}_kv{kv_heads}_h{head}", 2, 1, heads, kv_heads, head, past_lens=[5, 3])
    gqa_case(f"decode_shared_n{heads}_kv{kv_heads}_h{head}", 2, 1, heads, kv_heads, head, past_lens=[2, 6], cap=12)
    gqa_case(f"subsequent_n{heads}_kv{kv_heads}_h{head}", 1, 3, heads, kv_heads, head, past_lens=[4])
gqa_case("subsequent_shared", 1, 3, 4, 2, 16, past_lens=[5], cap=10)
for q_len, past_lens in ((5, None), (1, [4, 2])):
    gqa_case(f"packed_s{q_len}", 2, q_len, 4, 2, 16, past_lens=past_lens, packed=True)
    for interleaved in (0, 1):
        gqa_case(f"packed_rotary_i{interleaved}_s{q_len}", 2, q_len, 4, 2, 16, past_lens=past_lens, packed=True,
                 rotary=(interleaved, 8))
for interleaved in (0, 1):
    for q_len, past_lens, cap in ((6, None, None), (1, [3, 7], 10), (2, [5], None)):
        for head, half in ((16, 8), (32, 8), (32, 16)):
            if head == 32 and half == 8 and q_len != 6:
                continue
            gqa_case(f"rotary_i{interleaved}_s{q_len}_h{head}_r{half * 2}", len(past_lens or [0, 0]), q_len, 4, 2, head,
                     past_lens=past_lens,
                     cap=cap, rotary=(interleaved, half))
for softcap in (2.0, 30.0):
    gqa_case(f"softcap{softcap:g}", 2, 5, 4, 2, 16, attrs={"softcap": softcap, "scale": 1.0})
    gqa_case(f"softcap{softcap:g}_decode", 2, 1, 4, 2, 16, past_lens=[3, 6], attrs={"softcap": softcap})
for window in (1, 2, 4):
    gqa_case(f"local_window{window}", 1, 7, 2, 1, 16, attrs={"local_window_size": window})
    gqa_case(f"local_window{window}_decode", 2, 1, 2, 2, 16, past_lens=[6, 2], cap=8, attrs={"local_window_size": window})
gqa_case("smooth_softmax", 2, 4, 4, 2, 16, attrs={"smooth_softmax": 1})
gqa_case("smooth_softmax_decode", 2, 1, 4, 2, 16, past_lens=[2, 5], attrs={"smooth_softmax": 1})
gqa_case("head_sink", 2, 4, 4, 2, 16, sink=True)
gqa_case("scale", 1, 4, 2, 2, 16, attrs={"scale": 0.2})
for ab in ((1, 1), (0, 1), (1, 0)):
    gqa_case(f"attention_bias_b{ab[0]}_n{ab[1]}", 2, 4, 4, 2, 16, ab=ab)
gqa_case("attention_bias_decode", 2, 1, 4, 2, 16, past_lens=[3, 3], ab=(1, 1))
# Given position_ids: onnxruntime reads the first one (plus s) on a prompt, each one otherwise.
gqa_case("position_ids_prompt", 2, 4, 4, 2, 16, rotary=(0, 8), pos=np.array([[1, 2, 3, 4], [0, 1, 2, 3]], np.int64))
gqa_case("position_ids_decode", 2, 1, 4, 2, 16, past_lens=[3, 5], rotary=(1, 8), pos=np.array([[2], [7]], np.int64))
gqa_case("position_ids_subsequent", 1, 3, 4, 2, 32, past_lens=[4], rotary=(0, 16), pos=np.array([[1, 5, 2]], np.int64))
gqa_case("everything", 1, 3, 4, 1, 32, past_lens=[4], cap=9, rotary=(1, 16),
         attrs={"softcap": 10.0, "local_window_size": 3, "smooth_softmax": 1})
for tag, kw in (("prompt", {}), ("decode", {"past_lens": [3, 6]}), ("rotary", {"rotary": (0, 8)}),
                ("rotary_decode", {"rotary": (1, 8), "past_lens": [2, 4], "cap": 6}), ("packed", {"packed": True}),
                ("softcap_window", {"attrs": {"softcap": 5.0, "local_window_size": 2}})):
    gqa_case(f"f16_{tag}", 2, 1 if "past_lens" in kw else 4, 4, 2, 16, dtype=np.float16, **kw)

# DecoderMaskedMultiHeadAttention: one decoding step on a cache of 8 rows written at
# past_sequence_length (self-attention, with bias, mask and attention_bias), or cross attention
# on keys and values split into heads.
def dmmha_case(tag, batch, heads, head, past=0, cross_len=0, bias=False, mask=False, ab=None, attrs=None, dtype=np.float32):
    f = lambda *shape: floats(*shape, dtype=dtype)
    d, cap = heads * head, 8
    total = cross_len or past + 1
    a = {"num_heads": heads}
    a.update(attrs or {})
    if cross_len:
        kv = [("key", f(batch, heads, cross_len, head)), ("value", f(batch, heads, cross_len, head))]
        cache = [("past_key", None), ("past_value", None), ("past_sequence_length", None)]
    else:
        a["past_present_share_buffer"] = 1
        kv = [("key", f(batch, 1, d)), ("value", f(batch, 1, d))]
        cache = [("past_key", f(batch, heads, cap, head)), ("past_value", f(batch, heads, cap, head)),
                 ("past_sequence_length", np.array([past], np.int32))]
    case(f"DecoderMaskedMultiHeadAttention_{tag}", "DecoderMaskedMultiHeadAttention",
         [("query", f(batch, 1, d))] + kv +
         [("mask_index", key_mask("per_key", batch, 1, total) if mask else None),
          ("attention_bias", f(batch if ab[0] else 1, heads if ab[1] else 1, 1, total) if ab else None)] + cache +
         [("beam_width", None), ("cache_indirection", None), ("bias", f(3 * d) if bias else None)],
         a, outputs=("y0",) if cross_len else ("y0", "y1", "y2"))


for batch in (1, 2):
    for heads, head in ((2, 16), (4, 8)):
        for past in (1, 3, 6):
            dmmha_case(f"b{batch}_n{heads}_h{head}_past{past}", batch, heads, head, past=past, bias=past != 3,
                       mask=past == 3)
dmmha_case("attention_bias", 2, 2, 16, past=4, ab=(1, 1))
dmmha_case("attention_bias_broadcast", 2, 2, 16, past=4, ab=(0, 1), mask=True)
dmmha_case("scale", 1, 2, 16, past=2, attrs={"scale": 0.4, "mask_filter_value": -100.0}, mask=True)
for cross_len in (1, 5):
    for bias in (False, True):
        dmmha_case(f"cross_l{cross_len}{'_bias' if bias else ''}", 2, 2, 16, cross_len=cross_len, bias=bias,
                   mask=cross_len == 5)
dmmha_case("f16", 2, 2, 16, past=3, bias=True, mask=True, dtype=np.float16)
dmmha_case("f16_cross", 2, 2, 16, cross_len=4, dtype=np.float16)

ort_cases = [c for c in cases if c[3] is None]
jobs = [{"model": path, "inputs": files, "output_dir": os.path.join(os.path.dirname(path), "ort")}
        for _, path, files, _, _ in ort_cases]
for j in jobs:
    os.makedirs(j["output_dir"])
lines = dict(zip((c[0] for c in ort_cases), ort_batch(ort_run, env, work, jobs, level="disabled")))
passed, failed = [], []
worst = {False: 0.0, True: 0.0}
for name, path, files, numpy_ref, half in cases:
    mine_dir = os.path.join(os.path.dirname(path), "onnxtool")
    args = [a for n, f in files.items() for a in ("--input", f"{n}={f}")]
    r = subprocess.run([onnxtool, "run", path, *args, "--output-dir", mine_dir, "--quiet"], capture_output=True, text=True)
    if r.returncode:
        failed.append(name)
        print(f"FAIL {name}: onnxtool: {r.stderr.strip()}")
        continue
    if numpy_ref is None:
        outputs = lines[name]["outputs"]
    else:
        outputs = []
        for o, ref in numpy_ref.items():
            f = os.path.join(os.path.dirname(path), "numpy", o + ".npy")
            os.makedirs(os.path.dirname(f), exist_ok=True)
            np.save(f, ref)
            outputs.append({"name": o, "file": f})
    problem, ratio = judge_outputs(outputs, mine_dir, *((2e-3, 1e-3) if half else (1e-3, 1e-5)))
    if problem:
        failed.append(name)
        print(f"FAIL {name}: {problem}")
    else:
        passed.append(name)
        worst[half] = max(worst[half], ratio)
        print(f"ok   {name} (worst error/tolerance {ratio:.3g})")
attention = sum(1 for c in cases if c[0].split("_")[0] in ("Attention", "MultiHeadAttention", "GroupQueryAttention",
                                                                   "DecoderMaskedMultiHeadAttention"))
print(f"{len(passed)} of {len(cases)} com.microsoft transformer cases match ({attention} of the attention ops) "
      f"({len(cases) - len(ort_cases)} judged by numpy, the rest by onnxruntime; worst error/tolerance "
      f"{worst[False]:.3g} float32, {worst[True]:.3g} float16), {len(failed)} differ{SAMPLE.note()}")
finish(failed)
