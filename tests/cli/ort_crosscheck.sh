#!/usr/bin/env bash
# onnxtool run against onnxruntime-node 1.30.0 on the real models with real inputs (issue 4):
# PaddleOCR v4 det/rec and the v2.0 direction classifier on skimage's page and photos, Silero VAD
# legacy/v5/v6 on espeak-ng speech (tests/make_real_inputs.py writes them into the cache). For
# every model and input set, both write every output as .npy and every element must satisfy
#
#   |ours - ort| <= atol + rtol * |ort|,   rtol = 1e-3,   atol = 1e-5 * max(1, max |ort|)
#
# per output. Why that atol: rtol alone cannot judge elements near zero (a softmax probability
# of 1e-9, a sigmoid in a flat region, a state entry that is a difference of large terms), whose
# float32 error is set by the magnitude of the terms summed (GEMM blocking, convolution
# algorithm, exp/tanh approximations differ between the two runtimes), not by the element's own
# value. 1e-5 is the backend suite's atol for outputs of unit scale (the probabilities and
# sigmoid maps here); outputs with a larger range (the VAD LSTM cell state reaches |c| ~ 3) get
# it scaled by their largest magnitude, i.e. errors below 1e-5 of the output's range are
# ignored. Integer and bool outputs must be equal; shapes and dtypes too.
#
# Prints one line per model and input set (PASS/FAIL, max abs and max rel error of each output,
# max rel over the elements where the relative term dominates, |ort| >= atol/rtol) and a
# summary; exit 1 on any mismatch or run failure. Skipped (exit 77) when node,
# onnxruntime-node, the real models or the tools that make the inputs (Debian python3 with numpy
# and skimage, espeak-ng) are missing.
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR (models/, ort/,
# real_inputs/). CROSSCHECK_MANIFEST: another manifest.tsv to check instead (lines
# MODEL<TAB>SET<TAB>NAME=FILE..., MODEL absolute or under models/, FILEs beside the manifest).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_ort
needs_python numpy

if [[ -n ${CROSSCHECK_MANIFEST:-} ]]; then
  MANIFEST=$CROSSCHECK_MANIFEST
else
  [[ -d $MODELS ]] || skip_all "no real models in $MODELS (run testdata/fetch_models.sh)"
  needs_python skimage scipy
  command -v espeak-ng >/dev/null 2>&1 || skip_all "espeak-ng is not installed (run testdata/fetch_models.sh as root)"
  inputs_dir=$("$PYTHON" "$SOURCE_DIR/tests/make_real_inputs.py" "$CACHE_DIR") || {
    echo "FAIL: tests/make_real_inputs.py could not write the real inputs"
    exit 1
  }
  MANIFEST=$inputs_dir/manifest.tsv
fi
[[ -f $MANIFEST ]] || { echo "FAIL: no manifest $MANIFEST"; exit 1; }
INPUTS_DIR=$(dirname "$MANIFEST")

make_work ort_crosscheck

# compare OURS_DIR ORT_DIR: one line of per-output errors; exit 1 on a mismatch.
compare() {
  "$PYTHON" - "$1" "$2" <<'EOF'
import os, sys
import numpy as np

RTOL = 1e-3
ours_dir, ort_dir = sys.argv[1], sys.argv[2]
names = sorted(f for f in os.listdir(ort_dir) if f.endswith(".npy"))
parts, ok = [], True
if not names:
    print("onnxruntime wrote no outputs")
    sys.exit(1)
for f in names:
    name = f[:-4]
    ref = np.load(os.path.join(ort_dir, f))
    path = os.path.join(ours_dir, f)
    if not os.path.exists(path):
        parts.append(f"{name}: missing in onnxtool's outputs")
        ok = False
        continue
    got = np.load(path)
    if got.dtype != ref.dtype or got.shape != ref.shape:
        parts.append(f"{name}: onnxtool {got.dtype}{list(got.shape)} vs onnxruntime {ref.dtype}{list(ref.shape)}")
        ok = False
        continue
    if ref.dtype.kind in "biu":
        bad = int(np.count_nonzero(got != ref))
        parts.append(f"{name}: {bad} of {ref.size} differ" if bad else f"{name}: exact")
        ok = ok and bad == 0
        continue
    a, b = got.astype(np.float64), ref.astype(np.float64)
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    atol = 1e-5 * max(1.0, scale)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
        same_nan = np.isnan(a) & np.isnan(b)
        same_inf = np.isinf(a) & (a == b)
        diff[same_nan | same_inf] = 0
        diff[np.isnan(diff)] = np.inf
    max_abs = float(diff.max()) if diff.size else 0.0
    big = np.abs(b) >= atol / RTOL  # where the relative term of the tolerance dominates
    max_rel = float((diff[big] / np.abs(b[big])).max()) if big.any() else 0.0
    bad = int(np.count_nonzero(diff > atol + RTOL * np.abs(b)))
    text = f"{name}{list(ref.shape)}: max abs {max_abs:.2e}, max rel {max_rel:.2e} (atol {atol:.0e})"
    if bad:
        worst = np.unravel_index(int(np.argmax(diff - RTOL * np.abs(b))), ref.shape)
        text += f", {bad} of {ref.size} beyond tolerance, worst at {list(map(int, worst))}: {a[worst]:.7g} vs {b[worst]:.7g}"
        ok = False
    parts.append(text)
print("; ".join(parts))
sys.exit(0 if ok else 1)
EOF
}

skipped=0
n=0
while IFS=$'\t' read -r model set files; do
  [[ -z $model || $model == \#* ]] && continue
  n=$((n + 1))
  [[ $model == /* ]] || model=$MODELS/$model
  label="$(basename "$model") $set"
  [[ $(basename "$model") == model.onnx ]] && label="$(basename "$(dirname "$model")") $set"
  if [[ ! -f $model ]]; then
    missing_data "$label: $model"
    skipped=$((skipped + 1))
    continue
  fi
  args=()
  for f in $files; do
    file=${f#*=}
    [[ $file == /* ]] || file=$INPUTS_DIR/$file
    args+=(--input "${f%%=*}=$file")
  done
  ours=$WORK/$n/onnxtool
  theirs=$WORK/$n/ort
  mkdir -p "$ours" "$theirs"
  if ! "$ONNXTOOL" run "$model" "${args[@]}" --output-dir "$ours" >/dev/null 2>"$WORK/err"; then
    fail "$label: onnxtool run failed: $(head -n 1 "$WORK/err")"
    continue
  fi
  if ! node "$ORT_RUN" "$model" "${args[@]}" --output-dir "$theirs" >/dev/null 2>"$WORK/err"; then
    fail "$label: onnxruntime failed: $(head -n 1 "$WORK/err")"
    continue
  fi
  if line=$(compare "$ours" "$theirs"); then
    echo "PASS $label: $line"
    ok
  else
    fail "$label: $line"
  fi
done <"$MANIFEST"

echo "$skipped model(s) missing; rtol 1e-3, atol 1e-5 x max(1, max|ort|)"
[[ $n -gt 0 ]] || fail "$MANIFEST lists no model"
finish
