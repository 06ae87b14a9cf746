#!/usr/bin/env bash
# Renders the three --report FILE.html pages in headless Chromium and writes their screenshots to
# docs/images/, the pictures docs/commands/{quantize,compare,run}.md show. Real models and inputs
# (testdata/fetch_models.sh fetches them; tests/make_quant_data.py makes the samples):
#  - quantize: PaddleOCR v4 rec, static, Conv and MatMul, calibrated on its text-line samples;
#  - compare --per-layer: rec against that int8 model on one held-out sample;
#  - run --profile: PaddleOCR v4 det on a photo, 10 runs.
#
# Usage: scripts/html_screenshots.sh [BINARY]   (default: build/onnxtool)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$root/build/onnxtool}
cache=${ONNXTOOL_CACHE_DIR:-$root/.cache}
command -v chromium >/dev/null || { echo "html_screenshots.sh: chromium is not installed" >&2; exit 1; }
for m in ch_PP-OCRv4_rec_infer ch_PP-OCRv4_det_infer; do
  [[ -f $cache/models/$m.onnx ]] || { echo "html_screenshots.sh: $cache/models/$m.onnx missing (testdata/fetch_models.sh)" >&2; exit 1; }
done
data=$(/usr/bin/python3 "$root/tests/make_quant_data.py" "$cache")
work=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool_screens.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Relative names in $work: the pages name the models as a user's would.
cd "$work"
cp "$cache/models/ch_PP-OCRv4_rec_infer.onnx" rec.onnx
cp "$cache/models/ch_PP-OCRv4_det_infer.onnx" det.onnx
"$bin" quantize rec.onnx -o rec_int8.onnx --mode static --op-types Conv,MatMul \
  --inputs "$data/ch_PP-OCRv4_rec_infer/calib" --report quantize_report.html --quiet >/dev/null
# compare exits 1 (its one line on stderr): the int8 model is beyond compare's default
# tolerance, which the page shows.
"$bin" compare rec.onnx rec_int8.onnx --inputs "$data/ch_PP-OCRv4_rec_infer/eval/code" --per-layer \
  --report compare_report.html --quiet >/dev/null 2>&1 || true
"$bin" run det.onnx --inputs "$data/ch_PP-OCRv4_det_infer/calib/astronaut" --benchmark 10 --profile \
  --report run_profile_report.html --quiet >/dev/null

mkdir -p "$root/docs/images"
for page in quantize_report compare_report run_profile_report; do
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --screenshot="$root/docs/images/$page.png" \
    --window-size=1200,2000 "file://$work/$page.html" 2>/dev/null
  echo "docs/images/$page.png: $(stat -c %s "$root/docs/images/$page.png") bytes"
done
