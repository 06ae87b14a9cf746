#!/usr/bin/python3
"""Calibration and evaluation samples for quantizing the runner benchmark's float models.

    bench/make_quant_bench_data.py [CACHE_DIR]   (default: $ONNXTOOL_CACHE_DIR, else <repo>/.cache)

Writes CACHE_DIR/quant_bench_data/<model>/{calib,eval}/<sample>/<input name>.npy, the layout
`onnxtool quantize --calib-data` reads (one subfolder per sample), for the 16 float models of
bench/runner_speed.sh's set (not isnet_quint8 and the Moonshine models: they are integer models
already) and for the two float Moonshine encoders, and prints the folder. bench/quantize_models.sh
calibrates on calib/ and judges on eval/. Within a model, calibration and evaluation never share a
source: other photos, other text crops, other sentences.

moonshine_encoder_float and moonshine_base_es_encoder_float are models too:
CACHE_DIR/models/bench/<name>.onnx, the float32 transformer encoders bench/make_float_moonshine.py
derives from the quantized ones of Moonshine tiny and Moonshine base (Spanish) (its docstring says
how, and what that means for the results). Each is made on every run where it is missing or its
stamp (<name>.onnx.stamp: the sha256 of that script and of the quantized model) is not current,
whatever the samples' stamp says.

Inputs are prepared as bench/make_bench_inputs.py prepares each model's (its functions and
tests/make_real_inputs.py's, imported), from python3-skimage's images and espeak-ng speech:
 - PaddleOCR det (v4, en v3): images at their own size rounded to multiples of 32; calibration on
   6 images, some with text-like regions (bw_text, rocket, clock_motion, horse) and some without
   (astronaut, camera); evaluation on page, coffee and the left motorcycle.
 - PaddleOCR rec (ch v4, ch v3, en v4) and ddddocr rec: calibration on 6 lines of page() below its
   title (tests/make_quant_data.py's page_lines()) and 6 lines of other words rendered in DejaVu
   sans, serif and monospace, regular and bold, at 16-30 pixels (a recognizer meets more than one
   font: calibrated on the page's body text alone, ch v4 rec reached 0.983 on the evaluation
   crops); evaluation on the title, a code line and the handwriting of text()
   (make_real_inputs.text_crops()), which overlap none of them.
 - PaddleOCR cls: 4 other page lines, each upright and upside down; evaluation on the title, the
   code line upside down and the handwriting.
 - ddddocr det (RGB 416x416), RetinaFace (BGR 640x640) and ISNet (1024x1024, 4 calibration and
   2 evaluation photos: it is big): skimage photos; RetinaFace's sets each hold a grid of faces
   from skimage's lfw_subset (faces 0-48 for calibration, 50-98 for evaluation) beside people
   (camera / astronaut) and photos without faces.
 - Speech (Silero VAD, openWakeWord): 4 sentences for calibration, 3 for evaluation, spoken by
   espeak-ng; one of each group starts with "Hey Jarvis", so the wake-word head sees its word.
Internal features are made by chaining real speech through the upstream models with `onnxtool
run` (the binary of $ONNXTOOL_BUILD_DIR, default <repo>/build):
 - Silero VAD (legacy: 1536-sample chunks, h and c; v5/v6: 512-sample chunks, state): each
   sentence runs chunk by chunk from zero state, each chunk getting the state the previous one
   left, so that a sample's state is the one the model really has there. Calibration: 4 chunks
   spread over each sentence; evaluation: the onset of speech in the first evaluation sentence,
   the loudest chunk of the second, the quietest chunk inside the third.
 - openWakeWord: the mel front end runs on each whole sentence (int16 scale); its frames, as
   openWakeWord uses them (x/10 + 2), give the embedding model's 76-frame windows (step 8); the
   wake-word head gets the first 16 embeddings (196 frames, about 2 s). The front
   end's own samples: each sentence's first second, as make_bench_inputs.py feeds it. The chain
   starts with 1 s of silence, so that the head's window ends after the first second of speech,
   where "Hey Jarvis" is (the fp32 head gives 0.99 there, about 1e-5 without the silence).
 - Moonshine's encoder (input_values [1, 80000]: 5 s at 16 kHz in [-1, 1], zero-padded, as
   make_bench_inputs.py feeds it): 4 sentences of their own for calibration in espeak-ng's
   American English voice (en-us), 3 others for evaluation in its default (British) voice.
   Moonshine base's Spanish encoder: 4 and 3 Spanish sentences of their own, in the "es" voice.
The stamp covers this script and the ones it imports, not the binary: a second run with unchanged
scripts only checks the stamp. Needs Debian's python3 with python3-numpy, python3-skimage (and
scipy), python3-pil with fonts-dejavu-core (the rendered text lines), python3-onnx (for the
float Moonshine) and espeak-ng.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

SCRIPT = os.path.abspath(__file__)
BENCH = os.path.dirname(SCRIPT)
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, BENCH)
import make_bench_inputs as bench  # noqa: E402  (the benchmark's preprocessing)
import make_quant_data as quant  # noqa: E402  (page_lines)
import make_real_inputs as real  # noqa: E402  (PaddleOCR preprocessing, speech, the stamp)

CALIB_SPEECH = (
    "Hey Jarvis, switch on the kitchen lights and start the kettle.",
    "The weather tomorrow will be cloudy, with a chance of rain in the afternoon.",
    "Please read me the last three messages from my sister.",
    "Numbers like forty two and nineteen eighty four are easy to say.",
)
EVAL_SPEECH = (
    "Hey Jarvis, what time is my first meeting on Monday?",
    "A small boat drifted slowly across the quiet harbour at dawn.",
    "Turn the music down a little, it is far too loud in here.",
)
SR = np.array(16000, dtype=np.int64)
# Moonshine's encoder: other sentences and, for calibration, another voice than the ones above.
MOONSHINE_CALIB = (
    "The quick brown fox jumps over the lazy dog.",
    "Please call Stella and ask her to bring these things.",
    "Speech recognition on small devices needs small models.",
    "It was the best of times, it was the worst of times.",
)
MOONSHINE_EVAL = (
    "Quantized encoders should still hear every word.",
    "Seven silent swans swam south at noon.",
    "The library closes at six, so bring the books back before then.",
)
MOONSHINE_CALIB_VOICE = "en-us"
# Moonshine base's Spanish encoder hears Spanish: its own sentences, in espeak-ng's "es" voice.
MOONSHINE_ES_CALIB = (
    "El veloz murciélago hindú comía feliz cardillo y kiwi.",
    "Por favor, llama a Estela y pídele que traiga estas cosas.",
    "El reconocimiento de voz en dispositivos pequeños necesita modelos pequeños.",
    "En un lugar de la Mancha, de cuyo nombre no quiero acordarme.",
)
MOONSHINE_ES_EVAL = (
    "Los codificadores cuantizados deberían oír cada palabra.",
    "Siete cisnes silenciosos nadaron hacia el sur al mediodía.",
    "La biblioteca cierra a las seis, así que devuelve los libros antes.",
)
# The float encoders: (name, quantized source, float model), paths relative to CACHE_DIR/models.
MOONSHINE_FLOATS = (
    ("moonshine_encoder_float", "bench/moonshine_encoder_quant.onnx", "bench/moonshine_encoder_float.onnx"),
    ("moonshine_base_es_encoder_float", "bench/moonshine_base_es_encoder_quant.onnx",
     "bench/moonshine_base_es_encoder_float.onnx"),
)


# --- onnxtool run, for the features of chained models

def onnxtool_binary():
    build = os.environ.get("ONNXTOOL_BUILD_DIR") or os.path.join(ROOT, "build")
    if not os.path.isabs(build):
        build = os.path.join(ROOT, build)
    return os.path.join(build, "onnxtool")


def run_model(model, feeds, work):
    """Runs MODEL (relative to CACHE_DIR/models) on `feeds` with `onnxtool run`; {output file stem:
    array}. A binary being relinked by a concurrent build is waited for (up to 2 minutes)."""
    binary = onnxtool_binary()
    path = os.path.join(real.cache_dir(), "models", model)
    ins, outs = os.path.join(work, "in"), os.path.join(work, "out")
    for folder in (ins, outs):
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
    for name, array in feeds.items():
        np.save(os.path.join(ins, name + ".npy"), np.array(array, order="C"))
    error = ""
    for _ in range(3):
        deadline = time.time() + 120
        while not os.access(binary, os.X_OK) and time.time() < deadline:
            time.sleep(2)
        done = subprocess.run([binary, "run", path, "--inputs", ins, "--output-dir", outs, "--threads", "2"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode == 0:
            return {f[: -len(".npy")]: np.load(os.path.join(outs, f)) for f in os.listdir(outs)}
        error = (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]
        time.sleep(2)
    raise SystemExit(f"make_quant_bench_data.py: onnxtool run {model} failed: {error}")


# --- sources

def speak(text, voice=None):
    """16 kHz speech of `text`, in espeak-ng's default voice or `voice`."""
    with tempfile.TemporaryDirectory() as work:
        return real.speech_16k(work, text, voice)


def photo(name):
    """A skimage image file as shipped, RGB uint8 HxWx3 (gray files repeated; data.horse() is
    a mask, the file a photo-like drawing)."""
    from skimage import data, io
    img = io.imread(os.path.join(os.path.dirname(data.__file__), name))
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    return np.ascontiguousarray(img[..., :3])


def face_grid(first, side=7):
    """side x side faces of skimage's lfw_subset (25x25 gray; the first 100 are faces) from
    `first` on, as one RGB uint8 image."""
    from skimage import data
    faces = data.lfw_subset()[first:first + side * side]
    rows = [np.hstack(list(faces[r * side:(r + 1) * side])) for r in range(side)]
    grid = (np.vstack(rows) * 255.0).round().astype(np.uint8)
    return np.stack([grid] * 3, axis=-1)


def chunk_energy(audio, size):
    n = len(audio) // size
    chunks = audio[: n * size].reshape(n, size)
    return chunks, np.sqrt((chunks.astype(np.float64) ** 2).mean(axis=1))


def vad_points(audio, size):
    """Chunk indices: where speech starts, the loudest chunk, the quietest one inside the speech
    (make_real_inputs.vad_chunks' choice, as indices: the state there depends on the chunks
    before)."""
    _, energy = chunk_energy(audio, size)
    voiced = np.nonzero(energy > 0.1 * energy.max())[0]
    first, last = int(voiced[0]), int(voiced[-1])
    return {"onset": first, "loud": int(np.argmax(energy)),
            "pause": first + 1 + int(np.argmin(energy[first + 1:last]))}


# --- per model family: (model, split, sample, {input name: array})

def paddle_det(samples):
    from skimage import data
    calib = ("bw_text.png", "rocket.jpg", "clock_motion.png", "horse.png", "astronaut.png", "camera.png")
    evals = (("page", data.page()), ("coffee", data.coffee()), ("motorcycle", data.stereo_motorcycle()[0]))
    for model in ("ch_PP-OCRv4_det_infer", "en_PP-OCRv3_det"):
        for file in calib:
            samples.append((model, "calib", file.split(".")[0], {"x": real.det_input(photo(file))}))
        for name, img in evals:
            samples.append((model, "eval", name, {"x": real.det_input(img)}))


# Rendered calibration lines for the recognizers: other words than any evaluation crop holds, in
# the fonts of Debian's fonts-dejavu-core (sans, serif, monospace; regular and bold).
RENDERED_LINES = (
    ("DejaVuSans.ttf", "the river bends north of the old mill"),
    ("DejaVuSerif.ttf", "Invoice 2041: 17 items, total 388.50"),
    ("DejaVuSansMono.ttf", "print(len(values), total / 3.0)"),
    ("DejaVuSans-Bold.ttf", "GRAND OPENING Saturday"),
    ("DejaVuSerif-Bold.ttf", "Chapter Seven"),
    ("DejaVuSansMono-Bold.ttf", "def resize(image, width=320):"),
)
FONTS = "/usr/share/fonts/truetype/dejavu"


def rendered_lines():
    """RENDERED_LINES as grayscale crops: dark text on a light background, the text 16 to 30
    pixels high, a 4-pixel margin (a detector's box)."""
    from PIL import Image, ImageDraw, ImageFont
    crops = []
    rng = np.random.default_rng(4)
    for k, (font, text) in enumerate(RENDERED_LINES):
        size = (16, 22, 18, 30, 26, 20)[k]
        face = ImageFont.truetype(os.path.join(FONTS, font), size)
        left, top, right, bottom = face.getbbox(text)
        img = Image.new("L", (right - left + 8, bottom - top + 8), int(rng.integers(200, 256)))
        ImageDraw.Draw(img).text((4 - left, 4 - top), text, font=face, fill=int(rng.integers(0, 60)))
        crops.append(np.asarray(img))
    return crops


def text_lines(samples):
    lines = quant.page_lines()
    crops = real.text_crops()
    # page rows 63-159 (no eval crop overlaps them) and the rendered lines
    calib = lines[2::4][:3] + lines[3::4][:3] + rendered_lines()
    evals = ("title", "code", "handwriting")
    for model in ("ch_PP-OCRv4_rec_infer", "ch_PP-OCRv3_rec", "en_PP-OCRv4_rec"):
        for k, crop in enumerate(calib):
            samples.append((model, "calib", f"line{k}", {"x": real.line_input(crop, 320)[None]}))
        for name in evals:
            samples.append((model, "eval", name, {"x": real.line_input(crops[name], 320)[None]}))
    for k, crop in enumerate(calib):
        samples.append(("ddddocr_rec", "calib", f"line{k}", {"input1": bench.gray_line(crop, 64)}))
    for name in evals:
        samples.append(("ddddocr_rec", "eval", name, {"input1": bench.gray_line(crops[name], 64)}))
    cls = "ch_ppocr_mobile_v2.0_cls_infer"
    for k, crop in enumerate(lines[::2][:4]):  # page rows 44-121, left halves
        samples.append((cls, "calib", f"line{k}", {"x": real.line_input(crop, 192)[None]}))
        samples.append((cls, "calib", f"line{k}_flipped", {"x": real.line_input(crop[::-1, ::-1], 192)[None]}))
    for name, flipped in (("title", False), ("code", True), ("handwriting", False)):
        crop = crops[name][::-1, ::-1] if flipped else crops[name]
        samples.append((cls, "eval", name + ("_flipped" if flipped else ""), {"x": real.line_input(crop, 192)[None]}))


def photos(samples):
    from skimage import data
    # ddddocr det: RGB 416x416 at 0..255.
    for split, sources in (("calib", (("bw_text", photo("bw_text.png")), ("page", photo("page.png")),
                                      ("rocket", data.rocket()), ("astronaut", data.astronaut()))),
                           ("eval", (("text", photo("text.png")), ("coffee", data.coffee()),
                                     ("motorcycle", data.stereo_motorcycle()[0])))):
        for name, img in sources:
            samples.append(("ddddocr_det", split, name, {"images": bench.nchw(bench.rgb_square(img, 416))}))
    # RetinaFace: BGR 640x640 at 0..255.
    for split, sources in (("calib", (("camera", photo("camera.png")), ("faces0", face_grid(0)),
                                      ("chelsea", data.chelsea()), ("rocket", data.rocket()))),
                           ("eval", (("astronaut", data.astronaut()), ("faces50", face_grid(50)),
                                     ("coffee", data.coffee())))):
        for name, img in sources:
            samples.append(("retinaface_mnet025", split, name,
                            {"data": bench.nchw(bench.rgb_square(img, 640)[..., ::-1])}))
    # ISNet: RGB 1024x1024, x/255 - 0.5.
    for split, sources in (("calib", (("astronaut", data.astronaut()), ("coffee", data.coffee()),
                                      ("rocket", data.rocket()), ("camera", photo("camera.png")))),
                           ("eval", (("chelsea", data.chelsea()), ("motorcycle", data.stereo_motorcycle()[0])))):
        for name, img in sources:
            samples.append(("isnet_fp16", split, name,
                            {"input": bench.nchw(bench.rgb_square(img, 1024) / 255.0 - 0.5)}))


def silero(samples, speech, work):
    models = (("silero_vad_legacy", 1536), ("silero_vad_v5", 512), ("silero_vad_v6", 512))
    for model, size in models:
        wanted = []  # (split, audio, {chunk index: sample name})
        for s, audio in enumerate(speech["calib"]):
            n = len(audio) // size
            picks = np.linspace(0, n - 1, 6).round().astype(int)[1:-1]
            wanted.append(("calib", audio, {int(k): f"s{s}_chunk{k:03d}" for k in picks}))
        for s, (audio, point) in enumerate(zip(speech["eval"], ("onset", "loud", "pause"))):
            wanted.append(("eval", audio, {vad_points(audio, size)[point]: f"s{s}_{point}"}))
        for split, audio, picks in wanted:
            chunks, _ = chunk_energy(audio, size)
            if model == "silero_vad_legacy":
                state = {"h": np.zeros((2, 1, 64), np.float32), "c": np.zeros((2, 1, 64), np.float32)}
            else:
                state = {"state": np.zeros((2, 1, 128), np.float32)}
            for k in range(max(picks) + 1):  # chunk by chunk, each with the state the one before left
                feeds = {"input": chunks[k][None], "sr": SR, **state}
                if k in picks:
                    samples.append((model, split, picks[k], feeds))
                if k == max(picks):
                    break
                out = run_model(model + ".onnx", feeds, work)
                if model == "silero_vad_legacy":
                    state = {"h": out["hn"], "c": out["cn"]}
                else:
                    state = {"state": out["stateN"]}


def wake_word(samples, speech, work):
    for split in ("calib", "eval"):
        for s, audio in enumerate(speech[split]):
            pcm = audio * 32767
            samples.append(("oww_melspectrogram", split, f"s{s}",
                            {"input": bench.fixed_length(pcm, 16000)[None]}))
            # 1 s of silence first, as a stream's buffer holds it before somebody speaks: the head's
            # 16 embeddings (about 2 s) then end just after the sentence's first second.
            padded = np.concatenate([np.zeros(16000, np.float32), pcm])[None].astype(np.float32)
            mel = run_model("bench/oww_melspectrogram.onnx", {"input": padded}, work)["output"]
            frames = mel.reshape(-1, 32) / 10.0 + 2.0  # openWakeWord's scaling
            starts = list(range(0, len(frames) - 76 + 1, 8))
            windows = np.stack([frames[i:i + 76] for i in starts])[..., None].astype(np.float32)
            embeddings = run_model("bench/oww_embedding.onnx", {"input_1": windows}, work)["conv2d_19"]
            embeddings = embeddings.reshape(-1, 96)
            picks = (len(starts) // 3, 2 * len(starts) // 3) if split == "calib" else (len(starts) // 2,)
            for w in picks:
                samples.append(("oww_embedding", split, f"s{s}_frame{starts[w]:03d}", {"input_1": windows[w][None]}))
            if len(embeddings) < 16:
                raise SystemExit(f"make_quant_bench_data.py: sentence {s} of {split} is shorter than 2 s")
            samples.append(("oww_hey_jarvis", split, f"s{s}", {"x.1": embeddings[:16][None].astype(np.float32)}))


def moonshine(samples):
    for model, splits in (("moonshine_encoder_float", (("calib", MOONSHINE_CALIB, MOONSHINE_CALIB_VOICE),
                                                        ("eval", MOONSHINE_EVAL, None))),
                          ("moonshine_base_es_encoder_float", (("calib", MOONSHINE_ES_CALIB, "es"),
                                                                ("eval", MOONSHINE_ES_EVAL, "es")))):
        for split, texts, voice in splits:
            for s, text in enumerate(texts):
                audio = speak(text, voice)
                samples.append((model, split, f"s{s}", {"input_values": bench.fixed_length(audio, 80000)[None]}))


# --- the float Moonshine encoder, kept up to date beside the models it comes from

def float_moonshine(cache, source, target):
    """Makes CACHE/models/TARGET from SOURCE with bench/make_float_moonshine.py unless it is there
    with a current stamp (the sha256 of the script and of the quantized encoder). Its messages
    go to stderr: stdout is the samples' folder."""
    models = os.path.join(cache, "models")
    src, dst = os.path.join(models, source), os.path.join(models, target)
    script = os.path.join(BENCH, "make_float_moonshine.py")
    if not os.path.isfile(src):
        raise SystemExit(f"make_quant_bench_data.py: {src} is missing "
                         "(testdata/fetch_models.sh --manifest bench/models.sha256 fetches it)")
    digest = hashlib.sha256()
    for path in (script, src):
        with open(path, "rb") as f:
            digest.update(f.read())
    stamp = digest.hexdigest()
    stamp_file = dst + ".stamp"
    if os.path.isfile(dst) and os.path.isfile(stamp_file) and open(stamp_file).read().strip() == stamp:
        return
    tmp = dst + ".tmp"
    done = subprocess.run([sys.executable, script, src, tmp], stdout=sys.stderr)
    if done.returncode != 0:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise SystemExit(f"make_quant_bench_data.py: bench/make_float_moonshine.py failed on {src}")
    os.replace(tmp, dst)
    with open(stamp_file, "w") as f:
        f.write(stamp + "\n")


def build(out):
    samples = []
    paddle_det(samples)
    text_lines(samples)
    photos(samples)
    speech = {"calib": [speak(t) for t in CALIB_SPEECH], "eval": [speak(t) for t in EVAL_SPEECH]}
    with tempfile.TemporaryDirectory() as work:
        silero(samples, speech, work)
        wake_word(samples, speech, work)
    moonshine(samples)
    for model, split, name, feeds in samples:
        folder = os.path.join(out, model, split, name)
        os.makedirs(folder)
        for input_name, array in feeds.items():
            np.save(os.path.join(folder, input_name + ".npy"), np.array(array, order="C"))  # 0-d stays 0-d


def main():
    for _, source, target in MOONSHINE_FLOATS:
        float_moonshine(real.cache_dir(), source, target)
    sources = [SCRIPT, bench.SCRIPT, quant.SCRIPT, real.SCRIPT]
    print(real.build_cached(real.cache_dir(), "quant_bench_data", sources, build))


if __name__ == "__main__":
    main()
