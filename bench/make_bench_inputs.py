#!/usr/bin/python3
"""Inputs for the runner benchmark's models (bench/models.sha256), as .npy files.

    bench/make_bench_inputs.py [CACHE_DIR]   (default: $ONNXTOOL_CACHE_DIR, else <repo>/.cache)

Writes CACHE_DIR/bench_inputs/ in the layout of tests/make_real_inputs.py (one folder per model
with <input name>.npy, and manifest.tsv: MODEL<TAB>SET<TAB>NAME=FILE ...), one input set per
model so that every model weighs the same in the benchmark's geometric mean. The PaddleOCR v4 and
Silero models of the test set take one set each from tests/make_real_inputs.py (their real
inputs); the benchmark's own models get inputs made the way their packages prepare them, from the
same photos, text images and speech (python3-skimage, espeak-ng), except where the input is a
model's internal feature (wake-word embeddings, decoder states): there, seeded random numbers of
the usual scale. Prints the folder; a second run with unchanged scripts only checks the stamp.
"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import make_real_inputs as real  # noqa: E402  (the shared photo, text and speech helpers)

SCRIPT = os.path.abspath(__file__)

# The test-set models and the input set of tests/make_real_inputs.py each one runs with.
TEST_SET = {
    "ch_PP-OCRv4_det_infer.onnx": "coffee",
    "ch_PP-OCRv4_rec_infer.onnx": "title",
    "ch_ppocr_mobile_v2.0_cls_infer.onnx": "batch4",
    "silero_vad_legacy.onnx": "loud",
    "silero_vad_v5.onnx": "loud",
    "silero_vad_v6.onnx": "loud",
}


def rgb_square(img, side):
    """uint8 HxWx3 -> float32 side x side x 3 (bilinear), values 0..255, RGB."""
    return real.resize(np.asarray(img)[..., :3].astype(np.float32), side, side)


def nchw(x):
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)


def gray_line(crop, height):
    """A text-line crop as ddddocr feeds it: grayscale, height 64 keeping the aspect ratio,
    (x/255 - 0.5)/0.5, [1, 1, H, W]."""
    from skimage.color import rgb2gray
    img = np.asarray(crop, np.float32)
    gray = img if img.ndim == 2 else rgb2gray(img[..., :3] / 255.0) * 255.0
    width = int(round(gray.shape[1] * height / gray.shape[0]))
    x = real.resize(gray[..., None], height, width)[..., 0] / 255.0
    return ((x - 0.5) / 0.5)[None, None].astype(np.float32)


def fixed_length(audio, n):
    out = np.zeros(n, np.float32)
    out[: min(n, len(audio))] = audio[:n]
    return out


def speech_window(audio, size, context):
    """The loudest `size`-sample chunk of `audio` with the `context` samples before it."""
    n = len(audio) // size
    energy = (audio[: n * size].astype(np.float64).reshape(n, size) ** 2).mean(axis=1)
    k = max(1, int(np.argmax(energy)))
    return np.ascontiguousarray(audio[k * size - context: (k + 1) * size], dtype=np.float32)


def bench_sets(audio):
    """(model relative to models/, {input name: array}) for the benchmark's own models."""
    from skimage import data
    rng = np.random.default_rng(20261126)
    astronaut, coffee, chelsea = data.astronaut(), data.coffee(), data.chelsea()
    crops = real.text_crops()
    sets = []
    # ISNet (IMG.LY): RGB 1024x1024, x/255 - 0.5 (its mean 0.5, std 1).
    isnet = nchw(rgb_square(chelsea, 1024) / 255.0 - 0.5)
    sets.append(("bench/isnet_fp16.onnx", {"input": isnet}))
    sets.append(("bench/isnet_quint8.onnx", {"input": isnet}))
    # openWakeWord: 1 s of 16 kHz speech at int16 scale into the mel front end; the embedding
    # model takes 76 x 32 mel frames (log-mel / 10 + 2, about [0, 4]); the wake-word head 16
    # embeddings of 96.
    sets.append(("bench/oww_melspectrogram.onnx", {"input": (fixed_length(audio, 16000) * 32767)[None]}))
    sets.append(("bench/oww_embedding.onnx",
                 {"input_1": rng.uniform(0.0, 4.0, (1, 76, 32, 1)).astype(np.float32)}))
    sets.append(("bench/oww_hey_jarvis.onnx", {"x.1": rng.normal(0.0, 1.0, (1, 16, 96)).astype(np.float32)}))
    # PaddleOCR v3/v4 through Paddle2ONNX: as tests/make_real_inputs.py prepares PaddleOCR.
    sets.append(("bench/en_PP-OCRv3_det.onnx", {"x": real.det_input(coffee)}))
    sets.append(("bench/ch_PP-OCRv3_rec.onnx", {"x": real.line_input(crops["title"], 320)[None]}))
    sets.append(("bench/en_PP-OCRv4_rec.onnx", {"x": real.line_input(crops["code"], 320)[None]}))
    # ddddocr: the detector takes RGB 416x416 at 0..255; the recognizer a grayscale line.
    sets.append(("bench/ddddocr_det.onnx", {"images": nchw(rgb_square(coffee, 416))}))
    sets.append(("bench/ddddocr_rec.onnx", {"input1": gray_line(crops["code"], 64)}))
    # RetinaFace (insightface mnet 0.25): BGR 640x640 at 0..255.
    sets.append(("bench/retinaface_mnet025.onnx", {"data": nchw(rgb_square(astronaut, 640)[..., ::-1])}))
    # Moonshine tiny: 5 s of speech for the encoder; one decoder step with a 16-token KV cache
    # over that encoder output (207 frames; 8 heads of 36 in 6 layers).
    sets.append(("bench/moonshine_encoder_quant.onnx", {"input_values": fixed_length(audio, 80000)[None]}))
    dec = {"input_ids": np.array([[42]], np.int64),
           "encoder_hidden_states": rng.normal(0.0, 1.0, (1, 207, 288)).astype(np.float32)}
    for layer in range(6):
        for kind, length in (("decoder", 16), ("encoder", 207)):
            for part in ("key", "value"):
                dec[f"past_key_values.{layer}.{kind}.{part}"] = rng.normal(0.0, 1.0, (1, 8, length, 36)).astype(np.float32)
    dec["use_cache_branch"] = np.array([True])
    sets.append(("bench/moonshine_decoder_quant.onnx", dec))
    # BlazeFace (MediaPipe through tf2onnx): NHWC RGB scaled to [-1, 1], 128 and 256 square.
    for side, name in ((128, "front_128"), (256, "back_256")):
        face = rgb_square(astronaut, side) / 127.5 - 1.0
        sets.append((f"bench/blazeface_{name}.onnx", {"input:0": face[None].astype(np.float32)}))
    # Silero VAD re-exports: the loudest 512-sample chunk at 16 kHz behind its 64 samples of
    # context (576 in all), a zero state; sr (where the model has it) the int64 scalar 16000.
    window = speech_window(audio, 512, 64)
    for name in ("16k_op15", "half", "op18_ifless"):
        feeds = {"input": window[None], "state": np.zeros((2, 1, 128), np.float32)}
        if name != "half":
            feeds["sr"] = np.array(16000, dtype=np.int64)
        sets.append((f"bench/silero_vad_{name}.onnx", feeds))
    # The "hello deepa" wake-word head: 25 embeddings of 96, like the hey_jarvis head's.
    sets.append(("bench/oww_hello_deepa.onnx",
                 {"onnx::Flatten_0": rng.normal(0.0, 1.0, (1, 25, 96)).astype(np.float32)}))
    return sets


def build(out):
    import tempfile
    real_dir = real.build_cached(real.cache_dir(), "real_inputs", [real.SCRIPT], real.build)
    lines = []
    with open(os.path.join(real_dir, "manifest.tsv")) as f:
        for line in f:
            model, name, files = line.rstrip("\n").split("\t")
            if TEST_SET.get(model) != name:
                continue
            moved = []
            for item in files.split():
                input_name, rel = item.split("=", 1)
                folder = os.path.join(out, os.path.dirname(rel))
                os.makedirs(folder, exist_ok=True)
                shutil.copyfile(os.path.join(real_dir, rel), os.path.join(out, rel))
                moved.append(f"{input_name}={rel}")
            lines.append(f"{model}\t{name}\t{' '.join(moved)}\n")
    with tempfile.TemporaryDirectory() as work:
        audio = real.speech_16k(work)
    for model, feeds in bench_sets(audio):
        folder = os.path.basename(model)[: -len(".onnx")]
        os.makedirs(os.path.join(out, folder))
        files = []
        for input_name, array in feeds.items():
            rel = os.path.join(folder, input_name + ".npy")
            np.save(os.path.join(out, rel), np.array(array, order="C"))
            files.append(f"{input_name}={rel}")
        lines.append(f"{model}\tbench\t{' '.join(files)}\n")
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.writelines(lines)


def main():
    print(real.build_cached(real.cache_dir(), "bench_inputs", [SCRIPT, real.SCRIPT], build))


if __name__ == "__main__":
    main()
