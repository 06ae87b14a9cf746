#!/usr/bin/env bash
# The operators added or changed in opsets 18-28 (newer than the backend suite) against
# onnxruntime-node on one-node models written by make_opset_cases: tests/ort/new_opsets_vs_ort.py.
set -u
: "${ONNXTOOL:?set ONNXTOOL to the onnxtool binary}"
SOURCE_DIR=${ONNXTOOL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$SOURCE_DIR/tests/skip_lib.sh"
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$SOURCE_DIR/.cache}
MAKE_CASES=$(dirname "$ONNXTOOL")/make_opset_cases
if ! command -v node >/dev/null 2>&1 || ! /usr/bin/python3 -c 'import numpy' 2>/dev/null || [[ ! -x $MAKE_CASES ]]; then
  skip_all "node, python3-numpy or make_opset_cases missing"
fi
exec /usr/bin/python3 "$SOURCE_DIR/tests/ort/new_opsets_vs_ort.py" "$ONNXTOOL" "$MAKE_CASES" "$SOURCE_DIR" "$CACHE_DIR"
