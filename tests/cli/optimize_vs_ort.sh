#!/usr/bin/env bash
# onnxtool optimize against onnxruntime's basic level on the pytorch-converted suite and the real
# models (node counts, outputs and latency judged by onnxruntime-node): tests/ort/optimize_vs_ort.py.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v node >/dev/null 2>&1 || skip_all "node"
needs_python onnx numpy
exec "$PYTHON" "$SOURCE_DIR/tests/ort/optimize_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" "$BACKEND"
