#!/usr/bin/env bash
# onnxtool quantize: its own wall time and peak memory, and what the quantized models gain in
# onnxruntime-node 1.30.0 (issue 6's speed figures), as a markdown table. Not a ctest entry.
#
#   bench/quantize_speed.sh [RUNS]          (default 30 timed runs per latency)
#
# Per case: `onnxtool quantize` timed as a whole process (/usr/bin/time: wall seconds, peak RSS),
# then onnxruntime's latency on the fp32 and on the quantized model, the same input, THREADS
# intra-op threads (default 2), its default graph optimizations (which fuse QDQ groups into
# integer kernels), median of RUNS runs after a warm-up, the fp32 and the quantized model's runs
# alternating in one process (a shared machine's drift slows both alike), idle threads not
# spinning (ort_run.js --no-spin: spinning threads make 2-core timings jump); speed-up = fp32 /
# quantized. SPIN=1 keeps onnxruntime's default spinning. Static cases calibrate on
# tests/make_quant_data.py's calib/ samples and run on an eval/ sample (PaddleOCR det: the 512x736
# motorcycle photo).
#
# Environment: ONNXTOOL_BUILD_DIR (default build/), ONNXTOOL_CACHE_DIR (default .cache/), THREADS,
# SPIN.
set -uo pipefail

RUNS=${1:-30}
THREADS=${THREADS:-2}
BENCH=quantize_speed.sh
source "$(dirname "${BASH_SOURCE[0]}")/ort_setup.sh"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (apt-get install time)"
DATA=$("$PYTHON" "$ROOT/tests/make_quant_data.py" "$CACHE_DIR") || die "tests/make_quant_data.py failed"

# model | mode | flags | eval sample
CASES=(
  "ch_PP-OCRv4_det_infer|static|--per-channel|motorcycle"
  "ch_PP-OCRv4_det_infer|static|--per-channel --format qoperator|motorcycle"
  "ch_PP-OCRv4_det_infer|static|--per-channel --auto-exclude --accuracy-target 0.99|motorcycle"
  "ch_ppocr_mobile_v2.0_cls_infer|static|--per-channel|title"
  "ch_PP-OCRv4_rec_infer|dynamic|--per-channel|title"
  "silero_vad_v5|dynamic|--per-channel|chunk040"
)

latencies() {  # FP32_MODEL QUANTIZED_MODEL SAMPLE_DIR -> "fp32_median quantized_median" (ms)
  local args=() f
  for f in "$3"/*.npy; do args+=(--input "$(basename "$f" .npy)=$f"); done
  local spin=(--no-spin)
  [[ ${SPIN:-0} == 1 ]] && spin=()
  node "$ORT_RUN" "$1" --against "$2" "${args[@]}" "${spin[@]}" --threads "$THREADS" --benchmark "$RUNS" --json 2>/dev/null |
    "$PYTHON" -c 'import json,sys; d = json.load(sys.stdin); print("%.3f %.3f" % (d["latency_ms"]["median"], d["against_latency_ms"]["median"]))'
}

echo "| model | mode | flags | quantize wall s | quantize peak MiB | weights | file | onnxruntime fp32 ms | quantized ms | speed-up |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
status=0
for c in "${CASES[@]}"; do
  IFS='|' read -r model mode flags sample <<<"$c"
  src=$CACHE_DIR/models/$model.onnx
  out=$TMP/$model.$mode.onnx
  calib=()
  [[ $mode == static ]] && calib=(--calib-data "$DATA/$model/calib")
  # shellcheck disable=SC2086 # flags are words
  if ! /usr/bin/time -f '%e %M' -o "$TMP/time" "$ONNXTOOL" quantize "$src" -o "$out" --mode "$mode" $flags \
      "${calib[@]}" --json >"$TMP/q.json" 2>"$TMP/q.err"; then
    echo "| $model | $mode | $flags | failed: $(tail -1 "$TMP/q.err") |"
    status=1
    continue
  fi
  read -r wall rss <"$TMP/time"
  sizes=$("$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
w, f = d["weight_bytes"], d["file_bytes"]
print("%.3fx %.3fx" % (w["quantized"] / max(1, w["float"]), f["after"] / f["before"]))' "$TMP/q.json")
  read -r wratio fratio <<<"$sizes"
  read -r fp q <<<"$(latencies "$src" "$out" "$DATA/$model/eval/$sample")"
  speedup=$("$PYTHON" -c "print('%.2f' % ($fp / $q))" 2>/dev/null || echo "?")
  printf '| %s | %s | %s | %.2f | %.0f | %s | %s | %s | %s | %sx |\n' "$model" "$mode" "$flags" "$wall" \
    "$(("$rss" / 1024))" "$wratio" "$fratio" "$fp" "$q" "$speedup"
done
exit $status
