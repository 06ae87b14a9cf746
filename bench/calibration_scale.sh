#!/usr/bin/env bash
# How static calibration scales on the largest model of the runner benchmark set: ISNet at
# 1024x1024 in float32 (the float16 model of bench/models.sha256 converted with `onnxtool convert
# --to-fp32`, 176 MB), as a markdown table (issue 18's figures; not a ctest entry).
#
#   bench/calibration_scale.sh [SAMPLES...]     (default: 2 8)
#
# For each sample count N: `onnxtool quantize --mode static` calibrated on N photos (skimage's
# test images at 1024x1024, prepared as the background-removal package prepares its input),
# timed with GNU time (wall, peak RSS); minmax (the default), and entropy on the first count
# (its histograms cost extra passes). Against:
#  - one float32 inference: the median of `onnxtool run --benchmark 3` (the session already
#    warm, as the calibration's runs after its first);
#  - the model size, and the largest set of tensors of 1 MiB and more the runner holds at once
#    in a run (`run --profile`: tensor_peak_bytes).
# The quantize time per sample includes everything: loading, calibration, quantizing the
# weights, measuring the errors on min(N, 8) samples (one more run each, of the quantized model)
# and writing the file.
#
# Environment: ONNXTOOL_BUILD_DIR, ONNXTOOL_CACHE_DIR, THREADS (default: all cores).
# Exit status: 0 when every row was measured, 1 when some failed, 2 when nothing could run.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${ONNXTOOL_BUILD_DIR:-$ROOT/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$ROOT/.cache}
PYTHON=/usr/bin/python3
ONNXTOOL=$BUILD_DIR/onnxtool
SAMPLES=("$@")
[[ ${#SAMPLES[@]} -gt 0 ]] || SAMPLES=(2 8)

say() { echo "calibration_scale.sh: $*" >&2; }
die() { say "$*"; exit 2; }

for n in "${SAMPLES[@]}"; do
  [[ $n =~ ^[1-9][0-9]*$ && $n -le 20 ]] || die "a sample count must be 1..20, got '$n'"
done
if [[ ! -x $ONNXTOOL ]]; then
  say "building onnxtool in $BUILD_DIR"
  "$ROOT/scripts/build.sh" --build-dir "$BUILD_DIR" >/dev/null || die "the build failed"
fi
[[ -x /usr/bin/time ]] || die "GNU time is missing (testdata/fetch_models.sh installs it)"
ONNXTOOL_CACHE_DIR=$CACHE_DIR "$ROOT/testdata/fetch_models.sh" --manifest "$ROOT/bench/models.sha256" >/dev/null ||
  die "fetching bench/models.sha256 failed"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool_calibration.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
threads=()
[[ -n ${THREADS:-} ]] && threads=(--threads "$THREADS")

FP16=$CACHE_DIR/models/bench/isnet_fp16.onnx
FP32=$TMP/isnet_fp32.onnx
say "converting ISNet to float32"
"$ONNXTOOL" convert "$FP16" --to-fp32 -o "$FP32" --no-verify >/dev/null 2>"$TMP/err" || die "convert: $(head -n 1 "$TMP/err")"

# Calibration folders: SAMPLE_DIR/sK/input.npy, the photos as the package feeds them (RGB
# resized to 1024x1024, /255 - 0.5, NCHW).
largest=0
for n in "${SAMPLES[@]}"; do ((n > largest)) && largest=$n; done
"$PYTHON" - "$TMP/samples" "$largest" <<'EOF' || die "making the calibration samples failed (python3-skimage)"
import os, sys
import numpy as np
from skimage import color, data, transform
out, count = sys.argv[1], int(sys.argv[2])
names = ["chelsea", "astronaut", "coffee", "rocket", "cat", "immunohistochemistry", "hubble_deep_field",
         "retina", "horse", "clock", "colorwheel", "logo", "camera", "brick", "grass",
         "gravel", "moon", "page", "text", "coins"]
for k in range(count):
    img = getattr(data, names[k])()
    if isinstance(img, tuple):
        img = img[0]
    if img.ndim == 2:
        img = color.gray2rgb(img)
    img = np.asarray(img)[..., :3]
    img = img.astype(np.float32) / 255.0 if img.dtype == np.uint8 else img.astype(np.float32)
    a = transform.resize(img, (1024, 1024), anti_aliasing=True).astype(np.float32) - 0.5
    os.makedirs(f"{out}/s{k}", exist_ok=True)
    np.save(f"{out}/s{k}/input.npy", np.ascontiguousarray(a.transpose(2, 0, 1)[None]))
EOF

field() { "$PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    d = d[k]
print(d)' "$1" "$2"; }

say "one float32 inference"
input=(--input "input=$TMP/samples/s0/input.npy")
"$ONNXTOOL" run "$FP32" "${input[@]}" "${threads[@]}" --benchmark 3 --json >"$TMP/bench.json" 2>"$TMP/err" ||
  die "run: $(head -n 1 "$TMP/err")"
infer_ms=$(field "$TMP/bench.json" latency_ms.median)
"$ONNXTOOL" run "$FP32" "${input[@]}" "${threads[@]}" --profile --json >"$TMP/profile.json" 2>"$TMP/err" ||
  die "run --profile: $(head -n 1 "$TMP/err")"
live_bytes=$(field "$TMP/profile.json" profile.tensor_peak_bytes)
model_bytes=$(stat -c %s "$FP32")

rows=()
failed=0
first=1
for n in "${SAMPLES[@]}"; do
  rm -rf "$TMP/calib"
  mkdir -p "$TMP/calib"
  for ((k = 0; k < n; k++)); do cp -r "$TMP/samples/s$k" "$TMP/calib/"; done
  methods=(minmax)
  ((first)) && methods+=(entropy)
  first=0
  for method in "${methods[@]}"; do
    say "quantize, $n samples, $method"
    if ! /usr/bin/time -f "%e %M" -o "$TMP/time" "$ONNXTOOL" quantize "$FP32" -o "$TMP/q.onnx" --mode static \
        --calib-data "$TMP/calib" --calib-method "$method" >/dev/null 2>"$TMP/err"; then
      rows+=("| $n | $method | failed: $(grep -v '^Command' "$TMP/err" | head -n 1 | cut -c1-100) | | | | |")
      failed=1
      continue
    fi
    read -r wall rss_kb <"$TMP/time"
    rows+=("$(awk -v n="$n" -v m="$method" -v wall="$wall" -v kb="$rss_kb" -v inf="$infer_ms" \
      -v model="$model_bytes" -v live="$live_bytes" 'BEGIN {
        per = wall / n; mib = kb / 1024; mm = model / 1048576; lm = live / 1048576
        printf "| %d | %s | %.1f | %.2f | %.2f | %.0f | %.2f |", n, m, wall, per, per * 1000 / inf, mib, (mib - mm) / lm }')")
  done
done

# A search with no end in sight, bounded: a target the 12 outputs cannot all reach, with
# --time-limit 120. The whole command (calibration included) must end within the limit, saying
# why the model is written as it is.
say "quantize, $largest samples, --accuracy-target 0.999 --time-limit 120"
rm -rf "$TMP/calib" && mkdir -p "$TMP/calib"
for ((k = 0; k < largest; k++)); do cp -r "$TMP/samples/s$k" "$TMP/calib/"; done
limited="failed"
if /usr/bin/time -f "%e %M" -o "$TMP/time" "$ONNXTOOL" quantize "$FP32" -o "$TMP/q.onnx" --mode static --calib-data "$TMP/calib" \
    --accuracy-target 0.999 --time-limit 120 --json >"$TMP/limited.json" 2>"$TMP/err"; then
  read -r wall rss_kb <"$TMP/time"
  limited="$wall s, $(field "$TMP/limited.json" timed_out_after_attempts) attempts before the limit; changed: $(field "$TMP/limited.json" changed); $(field "$TMP/limited.json" unchanged | cut -c1-160)"
else
  failed=1
  limited="failed: $(grep -v '^Command' "$TMP/err" | tail -n 1 | cut -c1-120)"
fi

printf '\nISNet 1024x1024 float32: %.1f MiB file; one inference %.0f ms; the runner holds at most %.0f MiB of tensors of 1 MiB and more at once\n\n' \
  "$(awk -v b="$model_bytes" 'BEGIN { print b / 1048576 }')" "$infer_ms" "$(awk -v b="$live_bytes" 'BEGIN { print b / 1048576 }')"
echo "| samples | method | quantize s | s per sample | per sample / one inference | peak RSS MiB | (peak - model) / live set |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
printf '\n--accuracy-target 0.999 --time-limit 120 on %d samples: %s\n' "$largest" "$limited"
exit "$failed"
