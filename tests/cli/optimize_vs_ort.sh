#!/usr/bin/env bash
# onnxtool optimize against onnxruntime's basic level on the pytorch-converted suite and the real
# models (node counts, outputs and latency judged by onnxruntime-node): tests/ort/optimize_vs_ort.py.
set -u
: "${ONNXTOOL:?set ONNXTOOL to the onnxtool binary}"
SOURCE_DIR=${ONNXTOOL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$SOURCE_DIR/tests/skip_lib.sh"
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$SOURCE_DIR/.cache}
if ! command -v node >/dev/null 2>&1 || ! /usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null; then
  skip_all "node or python3-onnx/numpy missing (testdata/fetch_models.sh installs them)"
fi
exec /usr/bin/python3 "$SOURCE_DIR/tests/ort/optimize_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" "${ONNXTOOL_BACKEND_DATA:-/usr/share/libonnx-testdata/data}"
