#!/usr/bin/env bash
# The Llama-style decoder of bench/make_decoder.py (2 layers, hidden 64) in its decomposed,
# opset-23 fused and com.microsoft forms: a prefill and a decode step with the KV cache, onnxtool
# against onnxruntime-node and the forms against each other: tests/ort/decoder_vs_ort.py.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_ort
needs_python numpy onnx
exec "$PYTHON" "$SOURCE_DIR/tests/ort/decoder_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR"
