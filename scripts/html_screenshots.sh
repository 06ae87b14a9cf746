#!/usr/bin/env bash
# Renders the three --report FILE.html pages (quantize, compare --per-layer, run --profile) of
# testdata/tiny_cnn.onnx in headless Chromium and writes their screenshots to docs/images/, the
# pictures docs/commands/{quantize,compare,run}.md show.
#
# Usage: scripts/html_screenshots.sh [BINARY]   (default: build/onnxtool)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$root/build/onnxtool}
command -v chromium >/dev/null || { echo "html_screenshots.sh: chromium is not installed" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool_screens.XXXXXX")
trap 'rm -rf "$work"' EXIT
model=$root/testdata/tiny_cnn.onnx

# Two smooth samples of image float32 [1,3,32,32]: the tests' tiny_cnn_samples.
export ONNXTOOL=$bin
# shellcheck source=tests/cli/lib.sh
source "$root/tests/cli/lib.sh"
tiny_cnn_samples "$work/samples" 2

# Relative names in $work: the pages name the models as a user's would.
cd "$work"
cp "$model" model.onnx
"$bin" quantize model.onnx -o int8.onnx --mode static --inputs samples --op-types Conv,Gemm --exclude-nodes fc \
  --report quantize_report.html --quiet >/dev/null
# compare exits 1 (its one line on stderr): the int8 model is beyond the default tolerance,
# which the page shows.
"$bin" compare model.onnx int8.onnx --inputs samples/s0 --per-layer --report compare_report.html --quiet >/dev/null 2>&1 || true
"$bin" run model.onnx --random --benchmark 20 --profile --report run_profile_report.html --quiet >/dev/null

mkdir -p "$root/docs/images"
for page in quantize_report compare_report run_profile_report; do
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --screenshot="$root/docs/images/$page.png" \
    --window-size=1200,1400 "file://$work/$page.html" 2>/dev/null
  echo "docs/images/$page.png: $(stat -c %s "$root/docs/images/$page.png") bytes"
done
