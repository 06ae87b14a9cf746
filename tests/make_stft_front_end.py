"""Writes a polyphase STFT front end: audio [1, samples] -> log power spectrum [1, 257, frames].

The audio is split into 8 channels of every 8th sample, so that the STFT is one strided 1-D Conv of
8 input channels (kernel 64 = 512 / 8, stride 20 = 160 / 8) over them, Hann-windowed DFT rows as
its weights; then real^2 + imag^2 and log(power + 1e-6). Fed 16-bit-scaled PCM, its values span
many orders of magnitude: what dynamic quantization of the Conv's input per tensor handles on
random inputs and not on speech. Deterministic (no random numbers).

    make_stft_front_end.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

N_FFT, HOP, PHASES = 512, 160, 8


def build():
    bins = N_FFT // 2 + 1
    k = np.arange(N_FFT)
    f = np.arange(bins)[:, None]
    window = 0.5 - 0.5 * np.cos(2 * np.pi * k / N_FFT)
    rows = np.concatenate([np.cos(2 * np.pi * f * k / N_FFT) * window, -np.sin(2 * np.pi * f * k / N_FFT) * window])
    # Channel c of the polyphase input holds samples c, c + 8, ...: its taps are rows[:, c::8].
    weight = rows.reshape(2 * bins, N_FFT // PHASES, PHASES).transpose(0, 2, 1).astype(np.float32)
    audio = helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, "samples"])
    out = helper.make_tensor_value_info("logpower", TensorProto.FLOAT, [1, bins, "frames"])
    nodes = [
        helper.make_node("Reshape", ["audio", "phases_shape"], ["by_phase"], name="to_phases"),
        helper.make_node("Transpose", ["by_phase"], ["polyphase"], name="phases_first", perm=[0, 2, 1]),
        helper.make_node("Conv", ["polyphase", "dft"], ["spectrum"], name="stft", kernel_shape=[N_FFT // PHASES],
                         strides=[HOP // PHASES], pads=[0, 0]),
        helper.make_node("Split", ["spectrum", "halves"], ["real", "imag"], name="split", axis=1),
        helper.make_node("Mul", ["real", "real"], ["real2"], name="real_squared"),
        helper.make_node("Mul", ["imag", "imag"], ["imag2"], name="imag_squared"),
        helper.make_node("Add", ["real2", "imag2"], ["power"], name="power"),
        helper.make_node("Add", ["power", "floor"], ["floored"], name="floor"),
        helper.make_node("Log", ["floored"], ["logpower"], name="log"),
    ]
    inits = [
        numpy_helper.from_array(np.array([1, -1, PHASES], np.int64), "phases_shape"),
        numpy_helper.from_array(weight, "dft"),
        numpy_helper.from_array(np.array([bins, bins], np.int64), "halves"),
        numpy_helper.from_array(np.array(1e-6, np.float32), "floor"),
    ]
    graph = helper.make_graph(nodes, "stft_front_end", [audio], [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_stft_front_end.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    onnx.save(build(), sys.argv[1])
