#!/usr/bin/python3
"""`onnxtool convert --to-fp16` on a real peak-picking detector, judged by onnxruntime on photos.

    bench/fp16_mlsd.py [--on-verification-photo] [ONNXTOOL [CACHE_DIR]]   (defaults: build/onnxtool, .cache)

M-LSD (line segment detection; tf2onnx 1.8.5, opset 11, as jp.keijiro.mlsd ships it: pinned in
bench/models.sha256, fetched by `testdata/fetch_models.sh --manifest bench/models.sha256`) ends
with the pattern of docs/runtime_departures.md#peak_picking: its `scores` output is
Sigmoid -> MaxPool 3x3 -> Reshape, Reshape -> Equal -> Cast -> Mul. Inputs as the package's
Preprocess.compute makes them: RGB at 0..255 resized to 320x320 (bilinear), a fourth channel of
ones, NHWC [1,320,320,4].

Each model is converted with --keep-io-types and verified on one photo (skimage rocket), then run
in onnxruntime-node (its default level, "all") on six other photos against the float32 model:
cosine over all photos per output, the largest absolute error, the elements beyond the float16
tolerance of onnxtool's verification (per photo and output), and the peaks the package keeps
(scores >= 0.1, LineSegmentDetector.cs' default threshold) that both find. Rows: the default
conversion, plain float16 I/O, and --block-ops Sigmoid (the Sigmoid in float32, as the guided
conversion kept it in the report that led to the pattern's row) with and without
--allow-runtime-bugs. Prints a markdown table; exits 1 when a conversion written without
--allow-runtime-bugs scores below cosine 0.99 in onnxruntime. --on-verification-photo judges on
the photo the conversion was verified on instead: what verification promises, in onnxruntime.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "ort"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from make_bench_inputs import rgb_square  # noqa: E402
from ort_util import cosine, half_inputs, ort_batch  # noqa: E402

MODELS = ["mlsd_320x320_tiny", "mlsd_320x320_large"]
INPUT = "input_image_with_alpha:0"
VERIFY = "rocket"
EVAL = ["astronaut", "coffee", "camera", "chelsea", "brick", "motorcycle"]
THRESHOLD = 0.1
FLOOR = 0.99
RTOL, ATOL = 1e-2, 3e-2  # verification's float16 policy: |a - b| <= atol * max(1, max|a|) + rtol * |a|, per photo
ROWS = [("default", ["--keep-io-types"]), ("float16 I/O", []),
        ("--block-ops Sigmoid", ["--keep-io-types", "--block-ops", "Sigmoid"]),
        ("--block-ops Sigmoid --allow-runtime-bugs", ["--keep-io-types", "--block-ops", "Sigmoid", "--allow-runtime-bugs"])]


def photo(name):
    from skimage import data
    img = data.stereo_motorcycle()[0] if name == "motorcycle" else getattr(data, name)()
    return np.stack([img] * 3, axis=-1) if img.ndim == 2 else img


def mlsd_input(img):
    rgb = rgb_square(img, 320)
    return np.concatenate([rgb, np.ones((320, 320, 1), np.float32)], axis=-1)[None].astype(np.float32)


def outputs(lines):
    """{output name: [per-photo arrays]}"""
    got = {}
    for line in lines:
        for o in line["outputs"]:
            got.setdefault(o["name"], []).append(np.load(o["file"]).astype(np.float64))
    return got


def main():
    args = sys.argv[1:]
    on_verification_photo = "--on-verification-photo" in args
    args = [a for a in args if a != "--on-verification-photo"]
    onnxtool = os.path.abspath(args[0] if args else os.path.join(ROOT, "build", "onnxtool"))
    cache = os.path.abspath(args[1] if len(args) > 1 else os.environ.get("ONNXTOOL_CACHE_DIR", os.path.join(ROOT, ".cache")))
    ort_run = os.path.join(ROOT, "tests", "ort", "ort_run.js")
    env = dict(os.environ, ONNXTOOL_ORT_DIR=os.path.join(cache, "ort"))
    work = tempfile.mkdtemp(prefix="onnxtool_fp16_mlsd.")
    samples = []
    for name in [VERIFY] + EVAL:
        folder = os.path.join(work, "samples", name)
        os.makedirs(folder)
        # onnxtool reads NAME.npy with the input's name made file-safe; onnxruntime gets the name.
        path = os.path.join(folder, INPUT.replace(":", "_") + ".npy")
        np.save(path, mlsd_input(photo(name)))
        samples.append((name, {INPUT: path}))
    evals = samples[:1] if on_verification_photo else samples[1:]
    print("| model | conversion | kept float32 for onnxruntime | onnxruntime cosine: scores / offsets | max abs error: scores / offsets "
          "| elements beyond float16 tolerance | peaks >= 0.1 found (of float32's) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    below = 0
    for name in MODELS:
        src = os.path.join(cache, "models", "bench", name + ".onnx")
        if not os.path.exists(src):
            print(f"| {name} | not fetched (testdata/fetch_models.sh --manifest bench/models.sha256) | | | | | |")
            continue
        d = os.path.join(work, name)
        os.makedirs(d)
        ref = outputs(ort_batch(ort_run, env, d, [{"model": src, "inputs": f, "output_dir": os.path.join(d, "fp32", s)} for s, f in evals]))
        for label, flags in ROWS:
            out = os.path.join(d, f"fp16_{ROWS.index((label, flags))}.onnx")
            r = subprocess.run([onnxtool, "convert", src, "-o", out, "--to-fp16", "--inputs", os.path.join(work, "samples", VERIFY)] + flags,
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"| {name} | {label} | refused: {(r.stderr.strip().splitlines() or ['?'])[-1][:150]} | | | | |")
                continue
            kept = next((line.split(":")[1].split("(")[0].strip() for line in r.stdout.splitlines()
                         if line.startswith("kept in float32 for onnxruntime")), "0 nodes")
            got = outputs(ort_batch(ort_run, env, d, [{"model": out, "inputs": f, "output_dir": os.path.join(out + "_out", s)}
                                                      for s, f in half_inputs(evals, out, d)]))
            cos = {k: cosine(np.concatenate([a.ravel() for a in ref[k]]), np.concatenate([a.ravel() for a in got[k]])) for k in ref}
            err = {k: max(float(np.abs(a - b).max()) for a, b in zip(ref[k], got[k])) for k in ref}
            beyond = sum(int((np.abs(a - b) > ATOL * max(1.0, float(np.abs(a).max())) + RTOL * np.abs(a)).sum())
                         for k in ref for a, b in zip(ref[k], got[k]))
            total = sum(a.size for k in ref for a in ref[k])
            want = sum(int((a >= THRESHOLD).sum()) for a in ref["scores"])
            found = sum(int(((a >= THRESHOLD) & (b >= THRESHOLD)).sum()) for a, b in zip(ref["scores"], got["scores"]))
            if "--allow-runtime-bugs" not in flags:
                below += min(cos.values()) < FLOOR
            print(f"| {name} | {label} | {kept} | {cos['scores']:.4f} / {cos['offsets']:.5f} | {err['scores']:.3g} / {err['offsets']:.3g} | "
                  f"{beyond} of {total} | {found} of {want} |")
    print(f"\n{below} conversion(s) written without --allow-runtime-bugs below cosine {FLOOR} in onnxruntime")
    sys.exit(1 if below else 0)


if __name__ == "__main__":
    main()
