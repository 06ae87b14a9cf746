#!/usr/bin/env bash
# The operators added or changed in opsets 18-28 (newer than the backend suite) against
# onnxruntime-node on one-node models written by make_opset_cases: tests/ort/new_opsets_vs_ort.py.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MAKE_CASES=$(dirname "$ONNXTOOL")/make_opset_cases
[[ -x $MAKE_CASES ]] || { echo "FAIL: $MAKE_CASES is not built"; exit 1; }
command -v node >/dev/null 2>&1 || skip_all "node"
needs_python numpy
exec "$PYTHON" "$SOURCE_DIR/tests/ort/new_opsets_vs_ort.py" "$ONNXTOOL" "$MAKE_CASES" "$SOURCE_DIR" "$CACHE_DIR"
