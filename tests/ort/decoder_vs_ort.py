#!/usr/bin/python3
"""The Llama-style decoder of bench/make_decoder.py, small (2 layers, hidden 64), in its three
forms, run in onnxtool and in onnxruntime-node: a prefill of 7 tokens with an empty cache, then
one decode step fed the prefill's present keys and values.

Judged:
 - each form in onnxtool against the same form in onnxruntime (rtol 1e-3, atol 1e-4 times the
   output's largest magnitude: logits and every present key/value), argmax of the logits identical;
 - the forms against each other in onnxruntime (the generator's claim that they compute one
   function): logits within the same tolerance;
 - configurations: grouped-query (4 heads, 2 KV heads), multi-head (4 and 4) and multi-query
   (4 and 1) with a tied LM head, batch 2; the decomposed and fused forms also with a left-padded
   row (attention_mask 0 on its first two tokens); the com.microsoft form with right padding only
   (GroupQueryAttention takes no left padding).
A form whose ops onnxtool does not run yet is reported, and fails the test.

Usage: decoder_vs_ort.py ONNXTOOL SOURCE_DIR CACHE_DIR
"""
import os
import subprocess
import sys

import numpy as np

from ort_util import finish, judge_outputs, judge_setup, ort_batch, safe_name, work_dir

onnxtool, source_dir, cache_dir, ort_run, env = judge_setup(sys.argv)
work = work_dir("onnxtool_decoder.")
generator = os.path.join(source_dir, "bench", "make_decoder.py")
FORMS = ("decomposed", "fused", "microsoft")
CONFIGS = {"gqa": ["--heads", "4", "--kv-heads", "2"],
           "mha": ["--heads", "4", "--kv-heads", "4", "--tied"],
           "mqa": ["--heads", "4", "--kv-heads", "1", "--seed", "3"]}
LAYERS, HIDDEN, VOCAB, BATCH, PROMPT = 2, 64, 256, 2, 7


def kv_heads(flags):
    return int(flags[flags.index("--kv-heads") + 1])


def write_feeds(d, form, ids, mask, past):
    """The .npy feeds of one step in folder d; returns {name: file}."""
    os.makedirs(d, exist_ok=True)
    seq = ids.shape[1]
    total = mask.shape[1]
    feeds = {"input_ids": ids, "attention_mask": mask}
    if form != "microsoft":
        # positions count the row's tokens (left padding shifts them), as Hugging Face's
        # generate does: cumulative sum of the mask minus one
        positions = np.maximum(np.cumsum(mask, axis=1) - 1, 0)[:, total - seq:]
        feeds["position_ids"] = positions.astype(np.int64)
    feeds.update(past)
    files = {}
    for name, array in feeds.items():
        files[name] = os.path.join(d, name + ".npy")
        np.save(files[name], array)
    return files


def run_onnxtool(model, files, out):
    os.makedirs(out, exist_ok=True)
    args = [a for n, f in files.items() for a in ("--input", f"{n}={f}")]
    r = subprocess.run([onnxtool, "run", model, *args, "--output-dir", out, "--quiet"], capture_output=True,
                       text=True)
    return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["failed"])[-1]


def defined_positions(name, array, total):
    """The values of a left-padded batch that are defined alike in every runtime: all but the
    padded row's first two positions (of the `total` the mask spans). A padding query sees no key
    at all (all masked), and what attention gives there is each runtime's choice (onnxruntime's
    Attention gives other values than its own decomposed graph); the later layers' keys and values
    at those positions follow."""
    axis = 0 if name == "logits" else 1  # of row 1: [S, V] logits of the last S positions, [kv, T, D]
    row = array[1]
    keep = np.arange(total - row.shape[axis], total) >= 2
    return np.concatenate([array[0].ravel(), np.compress(keep, row, axis=axis).ravel()])


failures = []
rng = np.random.default_rng(7)
steps = []  # (label, form, model, step, files, ort dir, onnxtool dir)
models = {}
for config, flags in CONFIGS.items():
    for form in FORMS:
        model = os.path.join(work, f"{config}_{form}.onnx")
        r = subprocess.run(["/usr/bin/python3", generator, model, "--form", form, "--layers", str(LAYERS), "--hidden",
                            str(HIDDEN), "--vocab", str(VOCAB), *flags], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"FAIL bench/make_decoder.py {config} {form}: {r.stderr.strip()[-300:]}")
        models[config, form] = model

# Prefill: an empty cache, and for the decomposed and fused forms a left-padded second row.
d_head = HIDDEN // 4
prompts = {}
for config, flags in CONFIGS.items():
    ids = rng.integers(0, VOCAB, (BATCH, PROMPT)).astype(np.int64)
    empty = {f"past_key_values.{layer}.{kind}": np.zeros((BATCH, kv_heads(flags), 0, d_head), np.float32)
             for layer in range(LAYERS) for kind in ("key", "value")}
    for padding in ("none", "left", "right"):
        mask = np.ones((BATCH, PROMPT), np.int64)
        if padding == "left":
            mask[1, :2] = 0
        elif padding == "right":
            mask[1, -2:] = 0
        prompts[config, padding] = (ids, mask, empty)
        for form in FORMS:
            if (padding == "left") == (form == "microsoft") and padding != "none":
                continue  # GroupQueryAttention takes right padding; the others are shown left padding
            if padding == "right" and form != "microsoft":
                continue
            d = os.path.join(work, f"{config}_{form}_prefill_{padding}")
            files = write_feeds(d + "/in", form, ids, mask, empty)
            steps.append((f"{config} {form} prefill ({padding} padding)", config, form, "prefill", padding, files,
                          d + "/ort", d + "/mine"))


def judge(batch_steps):
    jobs = [{"model": models[s[1], s[2]], "inputs": s[5], "output_dir": s[6]} for s in batch_steps]
    lines = ort_batch(ort_run, env, work, jobs, level="disabled")
    for s, line in zip(batch_steps, lines):
        label, _, _, _, _, files, _, mine = s
        error = run_onnxtool(models[s[1], s[2]], files, mine)
        if error:
            failures.append(label)
            print(f"FAIL {label}: onnxtool: {error}")
            continue
        total = np.load(files["attention_mask"]).shape[1]
        select = (lambda name, a: defined_positions(name, a, total)) if s[4] == "left" else None
        problem, worst = judge_outputs(line["outputs"], mine, rtol=1e-3, atol=1e-4, scale_atol=True, select=select)
        ref_logits = np.load(os.path.join(s[6], "logits.npy"))
        if problem is None and not np.array_equal(ref_logits.argmax(-1),
                                                  np.load(os.path.join(mine, "logits.npy")).argmax(-1)):
            problem = "argmax of the logits differs"
        if problem:
            failures.append(label)
            print(f"FAIL {label}: {problem}")
        else:
            print(f"ok   {label}: worst error/tolerance {worst:.3g}")


judge(steps)

# Decode: one more token, the prefill's presents (onnxruntime's) as the cache.
decode_steps = []
for label, config, form, step, padding, files, ort_dir, _ in list(steps):
    ids, mask, _ = prompts[config, padding]
    if not os.path.exists(os.path.join(ort_dir, "logits.npy")):
        continue
    past = {f"past_key_values.{layer}.{kind}":
            np.load(os.path.join(ort_dir, safe_name(f"present.{layer}.{kind}") + ".npy"))
            for layer in range(LAYERS) for kind in ("key", "value")}
    nxt = np.load(os.path.join(ort_dir, "logits.npy"))[:, -1].argmax(-1).reshape(BATCH, 1).astype(np.int64)
    mask2 = np.concatenate([mask, np.ones((BATCH, 1), np.int64)], axis=1)
    if padding == "right":
        continue  # a right-padded row's next token would follow its padding
    d = os.path.join(work, f"{config}_{form}_decode_{padding}")
    files2 = write_feeds(d + "/in", form, nxt, mask2, past)
    decode_steps.append((f"{config} {form} decode ({padding} padding)", config, form, "decode", padding, files2,
                         d + "/ort", d + "/mine"))
judge(decode_steps)

# The forms against each other (onnxruntime's outputs): one function, three graphs.
for config in CONFIGS:
    for step in ("prefill", "decode"):
        for padding in ("none", "left"):
            ref = os.path.join(work, f"{config}_decomposed_{step}_{padding}", "ort", "logits.npy")
            for form in ("fused", "microsoft"):
                other = os.path.join(work, f"{config}_{form}_{step}_{padding}", "ort", "logits.npy")
                if not (os.path.exists(ref) and os.path.exists(other)):
                    continue
                a, b = np.load(ref), np.load(other)
                if padding == "left":  # a padded query row's output is not defined alike
                    a, b = a[0], b[0]
                err = float(np.max(np.abs(a - b)))
                bound = 1e-4 * max(1.0, float(np.max(np.abs(a)))) + 1e-3 * float(np.max(np.abs(a)))
                if err <= bound:
                    print(f"ok   {config} {step} ({padding} padding): {form} form = decomposed in onnxruntime "
                          f"(max abs {err:.3g})")
                else:
                    failures.append(f"{config} {form} {step}")
                    print(f"FAIL {config} {step} ({padding} padding): {form} form departs from decomposed "
                          f"in onnxruntime by {err:.3g}")

total = len(steps) + len(decode_steps)
print(f"{total - len([f for f in failures if 'prefill' in f or 'decode' in f])} of {total} decoder runs match "
      f"onnxruntime; {len(failures)} failures")
finish(failures)
