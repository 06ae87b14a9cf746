#!/usr/bin/env bash
# onnxruntime's quantized com.microsoft ops that onnxtool runs (runner/cpu/contrib_quant.cpp)
# against onnxruntime-node on one-node models over a grid of attributes, shapes and quantization
# parameters: tests/ort/contrib_quant_vs_ort.py.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_ort
needs_python numpy onnx
exec "$PYTHON" "$SOURCE_DIR/tests/ort/contrib_quant_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR"
