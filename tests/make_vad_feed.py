#!/usr/bin/python3
"""One random feed for a Silero VAD model, as .npy files in DIR.

    tests/make_vad_feed.py DIR MODEL      (MODEL: silero_vad_legacy, silero_vad_v5 or silero_vad_v6)

Silero takes its 16 kHz branch only with its real sample rate: random integers would pick no
valid branch. Writes input.npy (1x512 samples in [-0.5, 0.5), seed 5), sr.npy (16000, int64)
and the zero state: h.npy and c.npy [2,1,64] for the legacy model, state.npy [2,1,128] otherwise.
"""
import sys

import numpy as np

d, m = sys.argv[1:3]
rng = np.random.default_rng(5)
np.save(f"{d}/input.npy", rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32))
np.save(f"{d}/sr.npy", np.array(16000, dtype=np.int64))
if m == "silero_vad_legacy":
    np.save(f"{d}/h.npy", np.zeros((2, 1, 64), np.float32))
    np.save(f"{d}/c.npy", np.zeros((2, 1, 64), np.float32))
else:
    np.save(f"{d}/state.npy", np.zeros((2, 1, 128), np.float32))
