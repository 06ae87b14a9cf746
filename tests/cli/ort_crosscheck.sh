#!/usr/bin/env bash
# onnxtool run against onnxruntime-node on PaddleOCR det/rec/cls and Silero VAD with real inputs
# (skimage photos and text images, espeak-ng speech): tests/ort/crosscheck.py.
set -u
: "${ONNXTOOL:?set ONNXTOOL to the onnxtool binary}"
SOURCE_DIR=${ONNXTOOL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$SOURCE_DIR/.cache}
if ! command -v node >/dev/null 2>&1 || ! command -v espeak-ng >/dev/null 2>&1 ||
   ! /usr/bin/python3 -c 'import numpy, skimage' 2>/dev/null; then
  echo "SKIP: node, espeak-ng or python3-skimage missing (testdata/fetch_models.sh installs them)"
  exit 0
fi
exec /usr/bin/python3 "$SOURCE_DIR/tests/ort/crosscheck.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR"
