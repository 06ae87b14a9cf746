#!/usr/bin/python3
"""Real inputs for the real models, as .npy files, for the onnxruntime cross-check and benchmark.

    tests/make_real_inputs.py [CACHE_DIR]     (default: $ONNXTOOL_CACHE_DIR, else <repo>/.cache)

Writes CACHE_DIR/real_inputs/: one folder per input set holding <input name>.npy for every input
of the model, and manifest.tsv, one line per set:  MODEL<TAB>SET<TAB>NAME=FILE NAME=FILE ...
(MODEL relative to CACHE_DIR/models, FILEs relative to real_inputs/). Prints the folder.

Needs Debian's python3 with python3-numpy, python3-skimage (its photos and text images, and
scipy for resampling) and espeak-ng (speech). The sources are fixed, so the files are the same on
every run; a second run with an unchanged script only checks its stamp and prints the folder.

PaddleOCR preprocessing (as PaddleOCR's own predict_det / predict_rec / predict_cls do it, with
images in OpenCV's BGR channel order):
 - det (ch_PP-OCRv4_det_infer): both sides resized to the nearest multiple of 32 (Python round,
   at least 32; the images are below PaddleOCR's 960 side limit), bilinear; then
   (x/255 - mean)/std with ImageNet mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225)
   per channel; NCHW.  Sets: skimage page() (a photographed book page, 192x384 after the
   resize) and coffee() (a photo, 384x608).
 - rec (ch_PP-OCRv4_rec_infer): text-line crops of page() and text(), resized to height 48
   keeping the aspect ratio (width ceil(48*w/h), at most 320), (x/255 - 0.5)/0.5, zero-padded
   on the right to width 320.  Sets: one printed line, one handwritten line, and a batch of 4.
 - cls (ch_ppocr_mobile_v2.0_cls_infer): the same at 48x192.  Sets: a printed line, the same
   line upside down (what the classifier is for), and a batch of 4.
Silero VAD: espeak-ng speaks two sentences to a 22.05 kHz wav, resampled to 16 kHz
(scipy.signal.resample_poly 320/441) and scaled to [-1, 1]. Chunks: 512 samples for v5 and v6
(what they take at 16 kHz), 1536 for the legacy (v4) model, whose input is [batch, sequence]
and which vad-web feeds 1536-sample frames; the chunk where the speech starts, the loudest chunk
and the quietest chunk inside the utterance. State inputs (legacy: h, c [2,1,64]; v5/v6: state
[2,1,128]) are zero and sr is the int64 scalar 16000.
"""
import hashlib
import math
import os
import shutil
import subprocess
import sys
import tempfile
import wave

import numpy as np

SCRIPT = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(SCRIPT))

DET = "ch_PP-OCRv4_det_infer.onnx"
REC = "ch_PP-OCRv4_rec_infer.onnx"
CLS = "ch_ppocr_mobile_v2.0_cls_infer.onnx"
VAD = {"silero_vad_legacy.onnx": 1536, "silero_vad_v5.onnx": 512, "silero_vad_v6.onnx": 512}

SPEECH = ("Voice activity detection finds the parts of a recording where somebody speaks. "
          "The quick brown fox jumps over the lazy dog.")


def bgr(img):
    """uint8 HxW or HxWx3 RGB -> float32 HxWx3 in BGR order (OpenCV's, which PaddleOCR uses)."""
    img = np.asarray(img)
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    return img[..., :3][..., ::-1].astype(np.float32)


def resize(img, h, w):
    from skimage.transform import resize as sk_resize
    return sk_resize(img, (h, w, img.shape[2]), order=1, mode="edge", anti_aliasing=False,
                     preserve_range=True).astype(np.float32)


def det_input(img):
    img = bgr(img)
    h, w = img.shape[:2]
    rh = max(int(round(h / 32) * 32), 32)
    rw = max(int(round(w / 32) * 32), 32)
    x = resize(img, rh, rw) / 255.0
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    x = (x - mean) / std
    return x.transpose(2, 0, 1)[None].astype(np.float32)


def line_input(crop, width):
    """PaddleOCR resize_norm_img: height 48, aspect kept up to `width`, (x/255-0.5)/0.5, 0-pad."""
    img = bgr(crop)
    h, w = img.shape[:2]
    rw = min(width, int(math.ceil(48 * w / h)))
    x = resize(img, 48, rw) / 255.0
    x = (x - 0.5) / 0.5
    out = np.zeros((3, 48, width), np.float32)
    out[:, :, :rw] = x.transpose(2, 0, 1)
    return out


def text_crops():
    from skimage import data
    page, text = data.page(), data.text()
    return {
        "title": page[8:38, 0:160],        # "Region-based"
        "line": page[47:65, 0:105],        # "Let us first"
        "code": page[166:187, 40:200],     # "markers = np.zeros_like("
        "handwriting": text[45:110, 0:150],  # handwritten "(s) ="
    }


def speech_16k(work, text=None, voice=None):
    """`text` (default SPEECH) spoken by espeak-ng (its default voice, or `voice`) as 16 kHz
    float32 in [-1, 1]."""
    wav = os.path.join(work, "speech.wav")
    subprocess.run(["espeak-ng"] + (["-v", voice] if voice else []) + ["-w", wav, SPEECH if text is None else text], check=True)
    with wave.open(wav) as f:
        rate, width, channels = f.getframerate(), f.getsampwidth(), f.getnchannels()
        raw = f.readframes(f.getnframes())
    if width != 2:
        raise SystemExit(f"espeak-ng wrote {8 * width}-bit samples; expected 16-bit")
    x = np.frombuffer(raw, "<i2").astype(np.float64).reshape(-1, channels).mean(axis=1) / 32768.0
    if rate != 16000:
        from scipy.signal import resample_poly
        g = math.gcd(16000, rate)
        x = resample_poly(x, 16000 // g, rate // g)
    return np.clip(x, -1.0, 1.0).astype(np.float32)


def vad_chunks(audio, size):
    """The chunk where speech starts, the loudest one, and the quietest one inside the speech."""
    n = len(audio) // size
    chunks = audio[: n * size].reshape(n, size)
    energy = np.sqrt((chunks.astype(np.float64) ** 2).mean(axis=1))
    voiced = np.nonzero(energy > 0.1 * energy.max())[0]
    first, last = int(voiced[0]), int(voiced[-1])
    loud = int(np.argmax(energy))
    quiet = first + 1 + int(np.argmin(energy[first + 1:last]))
    return {"onset": chunks[first], "loud": chunks[loud], "pause": chunks[quiet]}


def build(out):
    from skimage import data
    sets = []  # (model, set, {input name: array})

    for name, img in (("page", data.page()), ("coffee", data.coffee())):
        sets.append((DET, name, {"x": det_input(img)}))

    crops = text_crops()
    batch = ["title", "line", "code", "handwriting"]
    for name in ("title", "handwriting"):
        sets.append((REC, name, {"x": line_input(crops[name], 320)[None]}))
    sets.append((REC, "batch4", {"x": np.stack([line_input(crops[c], 320) for c in batch])}))
    sets.append((CLS, "title", {"x": line_input(crops["title"], 192)[None]}))
    sets.append((CLS, "title_upside_down", {"x": line_input(crops["title"][::-1, ::-1], 192)[None]}))
    sets.append((CLS, "batch4", {"x": np.stack([line_input(crops[c], 192) for c in batch])}))

    with tempfile.TemporaryDirectory() as work:
        audio = speech_16k(work)
    sr = np.array(16000, dtype=np.int64)
    for model, size in VAD.items():
        for name, chunk in vad_chunks(audio, size).items():
            feeds = {"input": chunk[None].astype(np.float32), "sr": sr}
            if model == "silero_vad_legacy.onnx":
                feeds["h"] = np.zeros((2, 1, 64), np.float32)
                feeds["c"] = np.zeros((2, 1, 64), np.float32)
            else:
                feeds["state"] = np.zeros((2, 1, 128), np.float32)
            sets.append((model, name, feeds))

    lines = []
    for model, name, feeds in sets:
        folder = model[: -len(".onnx")] + "__" + name
        os.makedirs(os.path.join(out, folder))
        files = []
        for input_name, array in feeds.items():
            rel = os.path.join(folder, input_name + ".npy")
            np.save(os.path.join(out, rel), np.array(array, order="C"))  # keeps 0-d arrays 0-d
            files.append(f"{input_name}={rel}")
        lines.append(f"{model}\t{name}\t{' '.join(files)}\n")
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.writelines(lines)


def cache_dir():
    return sys.argv[1] if len(sys.argv) > 1 else os.environ.get("ONNXTOOL_CACHE_DIR") or os.path.join(ROOT, ".cache")


def build_cached(cache, name, sources, build_into):
    """CACHE/NAME, rebuilt by build_into(folder) unless its stamp (sha256 of the `sources` files)
    is current; built in a temporary folder and renamed into place. Returns the folder."""
    out = os.path.join(cache, name)
    digest = hashlib.sha256()
    for path in sources:
        with open(path, "rb") as f:
            digest.update(f.read())
    stamp = digest.hexdigest()
    stamp_file = os.path.join(out, "stamp")
    if os.path.isfile(stamp_file) and open(stamp_file).read().strip() == stamp:
        return out
    os.makedirs(cache, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=name + ".", dir=cache)
    try:
        build_into(tmp)
        with open(os.path.join(tmp, "stamp"), "w") as f:
            f.write(stamp + "\n")
        shutil.rmtree(out, ignore_errors=True)
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def main():
    print(build_cached(cache_dir(), "real_inputs", [SCRIPT], build))


if __name__ == "__main__":
    main()
