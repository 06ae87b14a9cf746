#!/usr/bin/env bash
# onnxruntime's com.microsoft transformer ops that onnxtool runs
# (runner/cpu/contrib_transformer.cpp and contrib_attention.cpp) against onnxruntime-node on
# one-node models over a grid of attributes: tests/ort/contrib_transformer_vs_ort.py.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_ort
needs_python numpy onnx
exec "$PYTHON" "$SOURCE_DIR/tests/ort/contrib_transformer_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR"
