#!/usr/bin/env bash
# What default verification adds to `onnxtool optimize` on the real models: wall time of
# optimize --no-verify and of optimize (verifying on its seeded random inputs; Silero on
# real-shaped inputs with sr = 16000), medians of N runs each, alternating. Prints a table.
#
# Usage: bench/verify_cost.sh [--runs N] [--build-dir DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs=5
build="$root/build"
while [[ $# -gt 0 ]]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--build-dir DIR]" >&2; exit 2 ;;
  esac
done
bin="$build/onnxtool"
models="${ONNXTOOL_CACHE_DIR:-$root/.cache}/models"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 - "$work" <<'EOF2'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
np.save(f"{d}/input.npy", rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32))
np.save(f"{d}/sr.npy", np.array(16000, np.int64))
np.save(f"{d}/state.npy", np.zeros((2, 1, 128), np.float32))
np.save(f"{d}/h.npy", np.zeros((2, 1, 64), np.float32))
np.save(f"{d}/c.npy", np.zeros((2, 1, 64), np.float32))
EOF2

# median_ms CMD...: the median wall time of $runs runs, in ms.
seconds() { local s; s=$(date +%s%N); "$@" >/dev/null; echo $(( ($(date +%s%N) - s) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '| model | verification inputs | optimize --no-verify ms | optimize ms | verification adds |\n|---|---|---:|---:|---:|\n'
for m in ch_PP-OCRv4_det_infer ch_PP-OCRv4_rec_infer ch_ppocr_mobile_v2.0_cls_infer silero_vad_legacy silero_vad_v5 silero_vad_v6; do
  [[ -f $models/$m.onnx ]] || continue
  inputs=()
  desc="random, symbolic dims 1"
  case $m in
    silero_vad_legacy) inputs=(--input "input=$work/input.npy" --input "sr=$work/sr.npy" --input "h=$work/h.npy" --input "c=$work/c.npy"); desc="1x512 samples, sr 16000" ;;
    silero_vad_*) inputs=(--input "input=$work/input.npy" --input "sr=$work/sr.npy" --input "state=$work/state.npy"); desc="1x512 samples, sr 16000" ;;
  esac
  off=() on=()
  for ((i = 0; i < runs; i++)); do
    off+=("$(seconds "$bin" optimize "$models/$m.onnx" -o "$work/o.onnx" --no-verify)")
    on+=("$(seconds "$bin" optimize "$models/$m.onnx" -o "$work/o.onnx" "${inputs[@]}")")
  done
  a=$(printf '%s\n' "${off[@]}" | median)
  b=$(printf '%s\n' "${on[@]}" | median)
  printf '| %s | %s | %s | %s | %s ms |\n' "$m" "$desc" "$a" "$b" "$((b - a))"
done
