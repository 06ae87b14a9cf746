#!/usr/bin/env bash
# onnxtool run against onnxruntime-node on the runner benchmark set, at 1 and 2 threads, as
# markdown tables (issue 18's figures; not a ctest entry). The set: the test set's PaddleOCR v4
# and Silero models (testdata/models.sha256) and bench/models.sha256's models from six more npm
# packages (PyTorch, tf2onnx, Paddle2ONNX, MXNet origins; float16 weights; dynamically quantized
# integer ops; a transformer speech encoder and decoder), one input set each
# (bench/make_bench_inputs.py).
#
#   bench/runner_speed.sh [RUNS] [--profile DIR] [--busy]
#
# With --busy, every pair of measurements (ours, then onnxruntime's, at one thread count) runs
# beside busy processes, one per core the measurement leaves free and one more (on 2 cores: 2
# beside a 1-thread run, 1 beside a 2-thread run), as on a shared CI runner; the table then
# gives p50 and p90 of both sides and their ratios (the float16 table is skipped). BUSY_PROCS=N
# starts N at every thread count instead (the same load for the 1- and 2-thread rows).
#
# RUNS (default 30) is the most timed runs per measurement; a model is timed fewer times (at
# least 3) when RUNS runs of it would take more than BUDGET_MS (default 4000) on our side, so
# the 1024x1024 models take minutes, not an hour. Both sides use the same protocol: one warm-up
# run, then N timed runs of the loaded session (`onnxtool run --benchmark N --threads T`, `node
# tests/ort/ort_run.js --benchmark N --threads T`); the median is reported. onnxruntime keeps its
# default graph optimizations (all), with intraOpNumThreads = T and sequential execution.
#
# Then the float16 table: each model with float16 weights against its float32 twin, both on our
# runner at 1 thread (the twin made with `onnxtool convert --to-fp32`, or for float32 models the
# float16 one with `convert --to-fp16 --keep-io-types`).
#
# With --profile DIR: also `onnxtool run --benchmark 3 --profile DIR/MODEL.trace.json --json` at 1
# thread for every model (three timed runs: one can catch a stall), the summary saved as
# DIR/MODEL.profile.json.
#
# A row whose run fails shows the error and stays out of the means. Prints per thread count the
# geometric mean ratio (onnxtool / onnxruntime) and the worst.
# Environment: ONNXTOOL_BUILD_DIR, ONNXTOOL_CACHE_DIR, THREADS (default "1 2"), BUDGET_MS, BUSY_PROCS.
# Exit status: 0 when every row was measured, 1 when some failed, 2 when nothing could run.
set -uo pipefail

RUNS=30
PROFILE_DIR=""
BUSY=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --profile) PROFILE_DIR=${2:?--profile needs a folder}; shift ;;
    --busy) BUSY=1 ;;
    *) RUNS=$1 ;;
  esac
  shift
done
THREAD_COUNTS=${THREADS:-1 2}
BUDGET_MS=${BUDGET_MS:-4000}
BENCH=runner_speed.sh
source "$(dirname "${BASH_SOURCE[0]}")/ort_setup.sh"
"$ROOT/testdata/fetch_models.sh" --manifest "$ROOT/bench/models.sha256" >/dev/null || die "fetching bench/models.sha256 failed"
INPUTS_DIR=$("$PYTHON" "$ROOT/bench/make_bench_inputs.py" "$CACHE_DIR") || die "bench/make_bench_inputs.py failed"
MANIFEST=$INPUTS_DIR/manifest.tsv
[[ -z $PROFILE_DIR ]] || mkdir -p "$PROFILE_DIR" || die "cannot create $PROFILE_DIR"

# field_of JSON_FILE KEY: latency_ms.KEY of a --json document.
field_of() { "$PYTHON" -c 'import json, sys; print("%.3f" % json.load(open(sys.argv[1]))["latency_ms"][sys.argv[2]])' "$1" "$2"; }
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", (b > 0 ? a / b : 0) }'; }

# runs_for MODEL ARGS...: the number of timed runs for MODEL, from one timed run of ours.
runs_for() {
  local ms
  "$ONNXTOOL" run "$@" --benchmark 1 --threads 1 --json >"$TMP/probe.json" 2>"$TMP/err" || return 1
  ms=$(field_of "$TMP/probe.json" median)
  awk -v ms="$ms" -v budget="$BUDGET_MS" -v most="$RUNS" 'BEGIN {
    n = (ms > 0 ? int(budget / ms) : most); if (n > most) n = most; if (n < 3) n = 3; print n }'
}

# Busy neighbours: processes spinning on the cores while a pair of measurements runs.
busy_pids=()
start_busy() {  # THREADS: one busy process per core the measurement leaves free, and one more
  local n i
  n=${BUSY_PROCS:-$(( $(nproc) > $1 ? $(nproc) - $1 + 1 : 1 ))}
  for ((i = 0; i < n; i++)); do
    bash -c 'while :; do :; done' &
    busy_pids+=($!)
  done
}
stop_busy() {
  [[ ${#busy_pids[@]} -gt 0 ]] || return 0
  kill "${busy_pids[@]}" 2>/dev/null
  wait "${busy_pids[@]}" 2>/dev/null
  busy_pids=()
}
trap stop_busy EXIT

rows=()
failed=0
declare -A p90_ratios     # threads -> space-separated p90 ratios (--busy)
declare -A ratios         # threads -> space-separated ratios
declare -A model_args     # model -> its --input arguments
models=()
while IFS=$'\t' read -r model _ files; do
  [[ -z $model || $model == \#* ]] && continue
  path=$CACHE_DIR/models/$model
  [[ -f $path ]] || { say "skipping $model: not fetched"; continue; }
  args=()
  for f in $files; do args+=(--input "${f%%=*}=$INPUTS_DIR/${f#*=}"); done
  model_args[$model]="${args[*]}"
  models+=("$model")
  name=$(basename "${model%.onnx}")
  if ! runs=$(runs_for "$path" "${args[@]}"); then
    rows+=("| $name | | failed: $(head -n 1 "$TMP/err" | cut -c1-100) | | | |")
    failed=1
    continue
  fi
  for t in $THREAD_COUNTS; do
    say "$name, $t thread(s), $runs runs$( ((BUSY)) && echo ', beside busy processes')"
    ((BUSY)) && start_busy "$t"
    if ! "$ONNXTOOL" run "$path" "${args[@]}" --benchmark "$runs" --threads "$t" --json >"$TMP/ours.json" 2>"$TMP/err"; then
      stop_busy
      rows+=("| $name | $t | failed: $(head -n 1 "$TMP/err" | cut -c1-100) | | | |")
      failed=1
      continue
    fi
    if ! node "$ORT_RUN" "$path" "${args[@]}" --benchmark "$runs" --threads "$t" --json >"$TMP/ort.json" 2>"$TMP/err"; then
      stop_busy
      rows+=("| $name | $t | | failed: $(head -n 1 "$TMP/err" | cut -c1-100) | | |")
      failed=1
      continue
    fi
    stop_busy
    ours=$(field_of "$TMP/ours.json" median)
    theirs=$(field_of "$TMP/ort.json" median)
    r=$(ratio_of "$ours" "$theirs")
    ratios[$t]="${ratios[$t]:-} $r"
    if ((BUSY)); then
      ours90=$(field_of "$TMP/ours.json" p90)
      theirs90=$(field_of "$TMP/ort.json" p90)
      r90=$(ratio_of "$ours90" "$theirs90")
      p90_ratios[$t]="${p90_ratios[$t]:-} $r90"
      rows+=("| $name | $t | $ours | $ours90 | $theirs | $theirs90 | $(printf '%.2f' "$r") | $(printf '%.2f' "$r90") | $runs |")
    else
      rows+=("| $name | $t | $ours | $theirs | $(printf '%.2f' "$r") | $runs |")
    fi
    say "${rows[-1]}"  # as it comes, for a run cut short
  done
  if [[ -n $PROFILE_DIR ]]; then
    say "$name: profile"
    "$ONNXTOOL" run "$path" "${args[@]}" --threads 1 --benchmark 3 --profile "$PROFILE_DIR/$name.trace.json" --json \
      >"$PROFILE_DIR/$name.profile.json" 2>"$TMP/err" || { say "$name: run --profile failed: $(head -n 1 "$TMP/err")"; failed=1; }
  fi
done <"$MANIFEST"
[[ ${#rows[@]} -gt 0 ]] || die "no model could be measured"

# --- float16 weights against float32, on our runner at 1 thread
fp16_rows=()
declare -A twin_of=(
  [bench/isnet_fp16.onnx]=--to-fp32
  [ch_PP-OCRv4_det_infer.onnx]=--to-fp16 [ch_PP-OCRv4_rec_infer.onnx]=--to-fp16
  [ch_ppocr_mobile_v2.0_cls_infer.onnx]=--to-fp16 [bench/ddddocr_det.onnx]=--to-fp16
  [bench/retinaface_mnet025.onnx]=--to-fp16
)
((BUSY)) && models=()  # busy mode: the speed tables only
for model in "${models[@]}"; do
  how=${twin_of[$model]:-}
  [[ -n $how ]] || continue
  name=$(basename "${model%.onnx}")
  twin=$TMP/$name.twin.onnx
  extra=()
  [[ $how == --to-fp16 ]] && extra=(--keep-io-types)
  if ! "$ONNXTOOL" convert "$CACHE_DIR/models/$model" -o "$twin" "$how" "${extra[@]}" --no-verify >/dev/null 2>"$TMP/err"; then
    fp16_rows+=("| $name | failed: convert $how: $(head -n 1 "$TMP/err" | cut -c1-80) | | |")
    failed=1
    continue
  fi
  if [[ $how == --to-fp32 ]]; then fp16=$CACHE_DIR/models/$model fp32=$twin; else fp16=$twin fp32=$CACHE_DIR/models/$model; fi
  read -r -a args <<<"${model_args[$model]}"
  runs=$(runs_for "$fp32" "${args[@]}") || runs=3
  say "$name: float16 against float32, $runs runs"
  if "$ONNXTOOL" run "$fp16" "${args[@]}" --benchmark "$runs" --threads 1 --json >"$TMP/fp16.json" 2>"$TMP/err" &&
     "$ONNXTOOL" run "$fp32" "${args[@]}" --benchmark "$runs" --threads 1 --json >"$TMP/fp32.json" 2>>"$TMP/err"; then
    a=$(field_of "$TMP/fp16.json" median)
    b=$(field_of "$TMP/fp32.json" median)
    fp16_rows+=("| $name | $a | $b | $(printf '%.2f' "$(ratio_of "$a" "$b")") |")
  else
    fp16_rows+=("| $name | failed: $(head -n 1 "$TMP/err" | cut -c1-80) | | |")
    failed=1
  fi
done

ort_version=$(sed -n 's/.*"version": "\([^"]*\)".*/\1/p' "$CACHE_DIR/ort/node_modules/onnxruntime-node/package.json" | head -n 1)
echo "## onnxtool run vs onnxruntime-node $ort_version"
echo
echo "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git'), $(uname -sm), $(nproc) cores, $(date -u +%Y-%m-%d)."
if ((BUSY)); then
  if [[ -n ${BUSY_PROCS:-} ]]; then
    echo "Beside $BUSY_PROCS busy process(es) at every thread count: p50 and p90 of"
  else
    echo "Beside busy processes (one per core a measurement leaves free, and one more): p50 and p90 of"
  fi
  echo "the timed runs after one warm-up run, both sides in-process, ours then onnxruntime's within"
  echo "the same busy period; onnxruntime with its default graph optimizations. ratio = onnxtool /"
  echo "onnxruntime (below 1: onnxtool is faster)."
  echo
  echo "| model | threads | onnxtool p50 ms | onnxtool p90 ms | onnxruntime p50 ms | onnxruntime p90 ms | ratio p50 | ratio p90 | runs |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
else
  echo "Median of the timed runs after one warm-up run, both sides in-process; onnxruntime with its"
  echo "default graph optimizations. ratio = onnxtool / onnxruntime (below 1: onnxtool is faster)."
  echo
  echo "| model | threads | onnxtool ms | onnxruntime ms | ratio | runs |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: |"
fi
printf '%s\n' "${rows[@]}"
echo
# summary LABEL THREADS RATIOS...: the geometric mean and the worst of the ratios.
summary() {
  awk -v label="$1" -v t="$2" 'BEGIN {
      s = 0; n = 0; worst = 0
      for (i = 3; i < ARGC; i++) { r = ARGV[i] + 0; s += log(r); n++; if (r > worst) worst = r }
      printf "threads %s: %s geometric mean ratio %.2f over %d models, worst %.2f\n", t, label, exp(s / n), n, worst
    }' "$@"
}
for t in $THREAD_COUNTS; do
  if [[ -z ${ratios[$t]:-} ]]; then
    echo "threads $t: no measurement"
    continue
  fi
  # shellcheck disable=SC2086  # the ratios are a list of numbers
  if ((BUSY)); then
    summary p50 "$t" ${ratios[$t]}
    summary p90 "$t" ${p90_ratios[$t]}
  else
    summary "" "$t" ${ratios[$t]}
  fi
done
if [[ ${#fp16_rows[@]} -gt 0 ]]; then
  echo
  echo "### float16 weights against float32 (onnxtool, 1 thread)"
  echo
  echo "| model | float16 ms | float32 ms | ratio |"
  echo "| --- | ---: | ---: | ---: |"
  printf '%s\n' "${fp16_rows[@]}"
fi
exit "$failed"
