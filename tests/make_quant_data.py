#!/usr/bin/python3
"""Calibration and evaluation samples for the quantization tests and benchmark.

    tests/make_quant_data.py [CACHE_DIR]     (default: $ONNXTOOL_CACHE_DIR, else <repo>/.cache)

Writes CACHE_DIR/quant_data/<model>/{calib,eval}/<sample>/<input name>.npy, the layout
`onnxtool quantize --calib-data` reads (one subfolder per sample), and prints the folder.
Calibration and evaluation never share a source: a quantized model is judged on inputs it was
not calibrated on.

 - PaddleOCR det: calibration on 10 skimage images, evaluation on four others (page, coffee,
   motorcycle_left, hubble_deep_field cropped to 480x480), all at their own size rounded to
   multiples of 32 (as PaddleOCR feeds the detector). The calibration images are ones the fp32
   detector finds text-like regions in (bw_text, rocket, cell, clock_motion, horse, moon) and
   ones it finds none in (astronaut, camera, chelsea, coins): a detector calibrated only on
   images without detections (the first version of this set: photos squashed to 320x320) never
   shows the quantizer the activations of a detection.
 - PaddleOCR cls: calibration on 8 text-line crops of the left half of skimage's page() below its
   title, each also upside down (what the classifier decides); evaluation on the title, the handwriting of
   text() and a code line, upright and upside down.
 - PaddleOCR rec and Silero VAD (dynamic quantization; their calib/ samples serve the per-node
   errors and --auto-exclude): rec evaluation on the text lines above and three right-half page
   lines, calibration on six other page lines; Silero on 512-sample chunks of espeak-ng speech
   with zero state, evaluation on a sentence of its own, calibration on the cross-check's.
Preprocessing is tests/make_real_inputs.py's (PaddleOCR's own). Needs Debian's python3 with
python3-numpy, python3-skimage and espeak-ng. Fixed sources: the same files on every run; a second
run with an unchanged script only checks its stamp.
"""
import os
import sys
import tempfile

import numpy as np

SCRIPT = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(SCRIPT))
import make_real_inputs as real  # noqa: E402 - the shared PaddleOCR preprocessing

SPEECH = ("Quantized models must still hear when somebody starts to talk, and when they stop. "
          "Seven silent swans swam south.")


def page_lines():
    """Text-line crops of skimage's page() below its title: 20-pixel bands every 19 rows, each
    split into a left and a right half (some lines are cut, as a text detector's boxes may be)."""
    from skimage import data
    page = data.page()
    crops = []
    for top in range(44, page.shape[0] - 20, 19):
        crops.append(page[top:top + 20, 0:192])
        crops.append(page[top:top + 20, 192:384])
    return crops


def build(out):
    from skimage import data, io
    samples = []  # (model, split, sample, {input: array})
    images = os.path.dirname(data.__file__)
    for file in ("bw_text.png", "rocket.jpg", "cell.png", "clock_motion.png", "horse.png", "moon.png", "astronaut.png",
                 "camera.png", "chelsea.png", "coins.png"):
        img = io.imread(os.path.join(images, file))  # the files as shipped (data.horse() is a mask)
        img = img[..., :3] if img.ndim == 3 else img
        samples.append(("ch_PP-OCRv4_det_infer", "calib", file.split(".")[0], {"x": real.det_input(img)}))
    hubble = data.hubble_deep_field()[:480, :480]
    for name, img in (("page", data.page()), ("coffee", data.coffee()), ("motorcycle", data.stereo_motorcycle()[0]),
                      ("hubble", hubble)):
        samples.append(("ch_PP-OCRv4_det_infer", "eval", name, {"x": real.det_input(img)}))

    lines = page_lines()
    for k, crop in enumerate(lines[::2][:8]):
        samples.append(("ch_ppocr_mobile_v2.0_cls_infer", "calib", f"line{k}", {"x": real.line_input(crop, 192)[None]}))
        samples.append(("ch_ppocr_mobile_v2.0_cls_infer", "calib", f"line{k}_flipped",
                        {"x": real.line_input(crop[::-1, ::-1], 192)[None]}))
    crops = real.text_crops()
    for name in ("title", "handwriting", "code"):
        for flipped in (False, True):
            c = crops[name][::-1, ::-1] if flipped else crops[name]
            tag = name + ("_flipped" if flipped else "")
            samples.append(("ch_ppocr_mobile_v2.0_cls_infer", "eval", tag, {"x": real.line_input(c, 192)[None]}))
            if not flipped:
                samples.append(("ch_PP-OCRv4_rec_infer", "eval", tag, {"x": real.line_input(c, 320)[None]}))
    for k, crop in enumerate(lines[1::4][:3]):
        samples.append(("ch_PP-OCRv4_rec_infer", "eval", f"line{k}", {"x": real.line_input(crop, 320)[None]}))
    for k, crop in enumerate(lines[2::4][:3] + lines[3::4][:3]):
        samples.append(("ch_PP-OCRv4_rec_infer", "calib", f"line{k}", {"x": real.line_input(crop, 320)[None]}))

    sr = np.array(16000, dtype=np.int64)
    for split, text, step in (("eval", SPEECH, 4), ("calib", real.SPEECH, 8)):
        with tempfile.TemporaryDirectory() as work:
            audio = real.speech_16k(work, text)
        n = len(audio) // 512
        chunks = audio[: n * 512].reshape(n, 512)
        for model in ("silero_vad_v5", "silero_vad_v6"):
            # Every step-th chunk: speech, pauses and the silence around them.
            for k in range(0, n, step):
                samples.append((model, split, f"chunk{k:03d}", {"input": chunks[k][None], "sr": sr,
                                                                 "state": np.zeros((2, 1, 128), np.float32)}))

    for model, split, name, feeds in samples:
        folder = os.path.join(out, model, split, name)
        os.makedirs(folder)
        for input_name, array in feeds.items():
            np.save(os.path.join(folder, input_name + ".npy"), np.array(array, order="C"))


def main():
    print(real.build_cached(real.cache_dir(), "quant_data", [SCRIPT, real.SCRIPT], build))


if __name__ == "__main__":
    main()
