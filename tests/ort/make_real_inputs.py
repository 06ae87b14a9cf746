#!/usr/bin/python3
"""Real inputs for the real models, as .npy files: OUT/<model>/<sample>/<input>.npy.

PaddleOCR det: photos and text pages from Debian python3-skimage's data (astronaut, coffee,
text, page), resized to multiples of 32, normalized as PaddleOCR does ((x/255 - mean) / std with
the ImageNet mean and std), NCHW. PaddleOCR rec and cls: text-line crops of the text and page
images, resized to 48x320 (rec) and 48x192 (cls), normalized (x/255 - 0.5) / 0.5. Silero VAD:
English speech synthesized by Debian espeak-ng, resampled to 16 kHz, cut into 512-sample chunks,
with zero states and sr = 16000. Deterministic: same packages, same files.

Usage: make_real_inputs.py OUT_DIR
"""
import os
import subprocess
import sys
import tempfile
import wave

import numpy as np
from skimage import data
from skimage.color import gray2rgb
from skimage.transform import resize

out = sys.argv[1]
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


def save(model, sample, arrays):
    d = os.path.join(out, model, sample)
    os.makedirs(d, exist_ok=True)
    for name, a in arrays.items():
        np.save(os.path.join(d, name + ".npy"), a)


def rgb(img):
    return gray2rgb(img) if img.ndim == 2 else img[..., :3]


def chw(img_float01):
    return np.ascontiguousarray(np.transpose(img_float01, (2, 0, 1)).astype(np.float32))


images = {"astronaut": data.astronaut(), "coffee": data.coffee(), "text": data.text(), "page": data.page()}
for name, img in images.items():
    img = rgb(img)
    h = max(32, int(round(img.shape[0] / 32)) * 32)
    w = max(32, int(round(img.shape[1] / 32)) * 32)
    x = resize(img, (h, w), anti_aliasing=True, preserve_range=True) / 255.0
    x = (chw(x) - MEAN) / STD
    save("ch_PP-OCRv4_det_infer", name, {"x": x[None].astype(np.float32)})

# Text-line crops (rows chosen on the text lines of each image).
crops = {"text_line0": (data.text(), 10, 60), "text_line1": (data.text(), 60, 120), "page_line0": (data.page(), 20, 60),
         "page_line1": (data.page(), 100, 140)}
for name, (img, top, bottom) in crops.items():
    line = rgb(img[top:bottom])
    for model, width in (("ch_PP-OCRv4_rec_infer", 320), ("ch_ppocr_mobile_v2.0_cls_infer", 192)):
        x = resize(line, (48, width), anti_aliasing=True, preserve_range=True) / 255.0
        x = (chw(x) - 0.5) / 0.5
        save(model, name, {"x": x[None].astype(np.float32)})

# Speech.
with tempfile.TemporaryDirectory() as tmp:
    wav = os.path.join(tmp, "speech.wav")
    subprocess.run(["espeak-ng", "-w", wav, "The quick brown fox jumps over the lazy dog. Voice activity detection works on speech."],
                   check=True, capture_output=True)
    with wave.open(wav) as w:
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768.0
t_in = np.arange(len(pcm)) / rate
t_out = np.arange(int(len(pcm) * 16000 / rate)) / 16000.0
audio = np.interp(t_out, t_in, pcm).astype(np.float32)
sr = np.array(16000, dtype=np.int64)
for k, start in enumerate((4000, 12000, 20000)):
    chunk = audio[start:start + 512][None]
    save("silero_vad_v5", f"speech{k}", {"input": chunk, "state": np.zeros((2, 1, 128), np.float32), "sr": sr})
    save("silero_vad_v6", f"speech{k}", {"input": chunk, "state": np.zeros((2, 1, 128), np.float32), "sr": sr})
    save("silero_vad_legacy", f"speech{k}", {"input": chunk, "sr": sr, "h": np.zeros((2, 1, 64), np.float32),
                                             "c": np.zeros((2, 1, 64), np.float32)})
print(f"make_real_inputs.py: inputs written to {out}")
