#!/usr/bin/env bash
# The real models as onnxruntime optimizes them at its "extended" level (with its com.microsoft
# ops): onnxtool check finds no error and onnxtool run matches onnxruntime on the same optimized
# model: tests/ort/extended_models_vs_ort.py.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_ort
needs_python numpy onnx
[[ -d $MODELS ]] || skip_all "no real models in $MODELS (run testdata/fetch_models.sh)"
exec "$PYTHON" "$SOURCE_DIR/tests/ort/extended_models_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR"
