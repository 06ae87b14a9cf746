#!/usr/bin/env bash
# onnxtool run against onnxruntime-node 1.30.0 on the real models with real inputs, at 1 and 2
# threads, as a markdown table (issue 4's performance figures; not a ctest entry).
#
#   bench/runner_speed.sh [RUNS]          (default 30 timed runs per measurement)
#
# Both sides use the same protocol: one warm-up run, then RUNS timed runs of the loaded session
# (`onnxtool run --benchmark RUNS --threads T`, `node tests/ort/ort_run.js --benchmark RUNS
# --threads T`), and the median is reported. onnxruntime keeps its default graph optimizations
# (all), with intraOpNumThreads = T and sequential execution. Inputs: tests/make_real_inputs.py
# (the same ones tests/cli/ort_crosscheck.sh checks), every input set of every model. A row whose
# onnxtool run fails (say, an op without a kernel yet) shows the error and stays out of the means.
#
# Prints the table (model, input, threads, onnxtool ms, onnxruntime ms, ratio = onnxtool /
# onnxruntime), then per thread count the geometric mean ratio and the worst ratio.
#
# Environment: ONNXTOOL_BUILD_DIR (default build/; onnxtool is built there when missing),
# ONNXTOOL_CACHE_DIR (default .cache/; testdata/fetch_models.sh fills it), THREADS (default "1 2").
# Exit status: 0 when every row was measured, 1 when some failed, 2 when nothing could run.
set -uo pipefail

RUNS=${1:-30}
THREAD_COUNTS=${THREADS:-1 2}
BENCH=runner_speed.sh
source "$(dirname "${BASH_SOURCE[0]}")/ort_setup.sh"
INPUTS_DIR=$("$PYTHON" "$ROOT/tests/make_real_inputs.py" "$CACHE_DIR") || die "tests/make_real_inputs.py failed"
MANIFEST=$INPUTS_DIR/manifest.tsv

# median_of JSON_FILE: latency_ms.median of a --json document.
median_of() { "$PYTHON" -c 'import json, sys; print("%.3f" % json.load(open(sys.argv[1]))["latency_ms"]["median"])' "$1"; }

rows=()
failed=0
declare -A ratios  # threads -> space-separated ratios
while IFS=$'\t' read -r model set files; do
  [[ -z $model || $model == \#* ]] && continue
  path=$CACHE_DIR/models/$model
  [[ -f $path ]] || { say "skipping $model: not fetched"; continue; }
  args=()
  for f in $files; do args+=(--input "${f%%=*}=$INPUTS_DIR/${f#*=}"); done
  for t in $THREAD_COUNTS; do
    say "$model $set, $t thread(s)"
    if ! "$ONNXTOOL" run "$path" "${args[@]}" --benchmark "$RUNS" --threads "$t" --json >"$TMP/ours.json" 2>"$TMP/err"; then
      rows+=("| ${model%.onnx} | $set | $t | failed: $(head -n 1 "$TMP/err" | cut -c1-100) | | |")
      failed=1
      continue
    fi
    if ! node "$ORT_RUN" "$path" "${args[@]}" --benchmark "$RUNS" --threads "$t" --json >"$TMP/ort.json" 2>"$TMP/err"; then
      rows+=("| ${model%.onnx} | $set | $t | | failed: $(head -n 1 "$TMP/err" | cut -c1-100) | |")
      failed=1
      continue
    fi
    ours=$(median_of "$TMP/ours.json")
    theirs=$(median_of "$TMP/ort.json")
    ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    ratios[$t]="${ratios[$t]:-} $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.6f", (b > 0 ? a / b : 0) }')"
    rows+=("| ${model%.onnx} | $set | $t | $ours | $theirs | $ratio |")
  done
done <"$MANIFEST"
[[ ${#rows[@]} -gt 0 ]] || die "no model could be measured (run testdata/fetch_models.sh)"

ort_version=$(sed -n 's/.*"version": "\([^"]*\)".*/\1/p' "$CACHE_DIR/ort/node_modules/onnxruntime-node/package.json" | head -n 1)
echo "## onnxtool run vs onnxruntime-node $ort_version"
echo
echo "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git'), $(uname -sm), $(nproc) cores, $(date -u +%Y-%m-%d)."
echo "Median of $RUNS runs after one warm-up run, both sides in-process; onnxruntime with its default"
echo "graph optimizations. ratio = onnxtool / onnxruntime (below 1: onnxtool is faster)."
echo
echo "| model | input | threads | onnxtool ms | onnxruntime ms | ratio |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
echo
for t in $THREAD_COUNTS; do
  if [[ -z ${ratios[$t]:-} ]]; then
    echo "threads $t: no measurement"
    continue
  fi
  # shellcheck disable=SC2086  # the ratios are a list of numbers
  awk -v t="$t" 'BEGIN {
      s = 0; n = 0; worst = 0
      for (i = 2; i < ARGC; i++) { r = ARGV[i] + 0; s += log(r); n++; if (r > worst) worst = r }
      printf "threads %s: geometric mean ratio %.2f over %d measurements, worst %.2f\n", t, exp(s / n), n, worst
    }' _ ${ratios[$t]}
done
exit "$failed"
