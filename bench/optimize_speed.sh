#!/usr/bin/env bash
# What `onnxtool optimize` gains in onnxruntime-node 1.30.0 on the real models, as a markdown
# table (issue 5's "onnxruntime no slower on the result"). Not a ctest entry.
#
#   bench/optimize_speed.sh [RUNS]          (default 40 timed runs per model)
#
# Per model: `onnxtool optimize`, then onnxruntime on the original and on the optimized model,
# the first input set tests/make_real_inputs.py makes for it, 1 intra-op thread, median of RUNS
# runs after a warm-up, the two models' runs alternating in one process (ort_run.js --against;
# a shared machine's drift slows both alike) with idle threads not spinning (--no-spin). Twice:
# onnxruntime's own graph optimizations off (what the graph itself costs) and at its default
# level (what a user of onnxruntime gets); speed-up = original / optimized.
#
# Environment: ONNXTOOL_BUILD_DIR (default build/), ONNXTOOL_CACHE_DIR (default .cache/).
set -uo pipefail

RUNS=${1:-40}
BENCH=optimize_speed.sh
source "$(dirname "${BASH_SOURCE[0]}")/ort_setup.sh"
INPUTS_DIR=$("$PYTHON" "$ROOT/tests/make_real_inputs.py" "$CACHE_DIR") || die "tests/make_real_inputs.py failed"

# latencies ORIGINAL OPTIMIZED LEVEL INPUT_ARGS... -> "original_median optimized_median" (ms)
latencies() {
  local a=$1 b=$2 level=$3
  shift 3
  node "$ORT_RUN" "$a" --against "$b" "$@" --level "$level" --no-spin --threads 1 --benchmark "$RUNS" --json \
    2>/dev/null |
    "$PYTHON" -c 'import json,sys; d = json.load(sys.stdin); print("%.3f %.3f" % (d["latency_ms"]["median"], d["against_latency_ms"]["median"]))'
}
ratio() { "$PYTHON" -c "print('%.2f' % ($1 / $2))" 2>/dev/null || echo "?"; }

echo "| model | input | nodes | optimized | onnxruntime off: original ms | optimized ms | speed-up | onnxruntime all: original ms | optimized ms | speed-up |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
status=0
declare -A seen
while IFS=$'\t' read -r model set files; do
  [[ -z $model || $model == \#* || -n ${seen[$model]:-} ]] && continue
  seen[$model]=1
  src=$CACHE_DIR/models/$model
  [[ -f $src ]] || continue
  out=$TMP/${model%.onnx}.optimized.onnx
  if ! "$ONNXTOOL" optimize "$src" -o "$out" --json >"$TMP/o.json" 2>"$TMP/o.err"; then
    echo "| $model | $set | failed: $(tail -1 "$TMP/o.err") |"
    status=1
    continue
  fi
  read -r before after < <("$PYTHON" -c 'import json,sys; d = json.load(open(sys.argv[1]))["nodes"]; print(d["before"], d["after"])' "$TMP/o.json")
  args=()
  for f in $files; do args+=(--input "${f%%=*}=$INPUTS_DIR/${f#*=}"); done
  read -r off_a off_b <<<"$(latencies "$src" "$out" disabled "${args[@]}")"
  read -r all_a all_b <<<"$(latencies "$src" "$out" all "${args[@]}")"
  printf '| %s | %s | %s | %s | %s | %s | %sx | %s | %s | %sx |\n' "${model%.onnx}" "$set" "$before" "$after" \
    "$off_a" "$off_b" "$(ratio "$off_a" "$off_b")" "$all_a" "$all_b" "$(ratio "$all_a" "$all_b")"
done <"$INPUTS_DIR/manifest.tsv"
exit $status
