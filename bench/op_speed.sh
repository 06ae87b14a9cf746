#!/usr/bin/env bash
# Op-level speed sweep: onnxtool run against onnxruntime-node on single-op models, as a markdown
# table (not a ctest entry). bench/make_op_models.py makes the models, some 570 configurations of
# the ops and attributes that exports carry (pooling, convolution, Gemm/MatMul, Resize,
# reductions, Transpose, broadcasting binary ops, unary activations, data movement, Cast,
# normalizations, LSTM/GRU, ArgMax/TopK/CumSum), most on a small and a large tensor, with one
# seeded input set each, into CACHE_DIR/op_models (rebuilt when the script changes).
#
#   bench/op_speed.sh [RUNS] [--filter REGEX] [--threads T]
#
# For each configuration: `onnxtool check`, then both sides time the model with the protocol of
# runner_speed.sh, each in one process per configuration: one warm-up run, then N timed runs of
# the loaded session (`onnxtool run --benchmark N --threads T`, `node tests/ort/ort_run.js
# --benchmark N --threads T`, one node start-up per configuration: ort_run.js --batch does not
# time), the median reported. onnxruntime keeps its default graph optimizations (all: it fuses
# the Gelu and SiLU patterns, for one), with intraOpNumThreads = T and sequential execution.
# RUNS (default 20) is the most timed runs; a configuration is timed fewer times (at least 3)
# when RUNS runs of it would take more than BUDGET_MS (default 2000) on our side, judged from
# one probe run of ours. --threads T (default 1) is the thread count of both sides. --filter
# keeps the configurations whose "ID DESCRIPTION" matches the extended regular expression.
#
# The warm-up run's outputs of both sides are compared once per configuration: a float output
# differs when its largest absolute difference exceeds 1e-3 of onnxruntime's largest magnitude
# (at least 1e-6 absolute), an integer or bool output when any element differs; shapes and
# types must match. A difference is noted in the row and listed after the table.
#
# The table: config, description, onnxtool µs, onnxruntime µs, ratio (onnxtool / onnxruntime,
# above 1: onnxtool is slower), runs and a note, sorted by ratio, worst first (failed rows on
# top). Rows where onnxruntime takes under 20 µs are listed but not counted: at that size the
# per-run overhead of the two front ends (node's async run, our session) is the measurement. The
# summary gives the number of configurations, how many are counted, how many of those are above
# 2x and the worst, and the geometric mean ratio of the counted rows.
#
# The onnxruntime side is onnxruntime-node's, not its C++ API's: ort_run.js times runs into
# output tensors allocated once (without them the binding copies every output into a fresh
# buffer each run, about 0.6 ms per MiB here), but a run still costs node some 12-25 µs of its
# own (setImmediate, the binding), more in the first hundred runs, so at RUNS 20 few tiny
# models come out under the 20 µs mark. Rows with an output of 1 MiB or more say so, and the
# summary repeats its figures without them.
# Environment: ONNXTOOL_BUILD_DIR, ONNXTOOL_CACHE_DIR, BUDGET_MS.
# Exit status: 0 when every row was measured, 1 when some check or run failed, 2 when nothing
# could run.
set -uo pipefail

RUNS=20
FILTER=""
THREADS=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --filter) FILTER=${2:?--filter needs a regular expression}; shift ;;
    --threads) THREADS=${2:?--threads needs a count}; shift ;;
    *) RUNS=$1 ;;
  esac
  shift
done
BUDGET_MS=${BUDGET_MS:-2000}
BENCH=op_speed.sh
source "$(dirname "${BASH_SOURCE[0]}")/ort_setup.sh"
[[ $THREADS =~ ^[1-9][0-9]*$ ]] || die "--threads must be a positive integer, got '$THREADS'"
MANIFEST=$TMP/manifest.tsv
"$PYTHON" "$ROOT/bench/make_op_models.py" "$CACHE_DIR/op_models" >"$MANIFEST" || die "bench/make_op_models.py failed"

# field_of JSON_FILE: latency_ms.median of a --json document, in ms.
field_of() { "$PYTHON" -c 'import json, sys; print("%.6f" % json.load(open(sys.argv[1]))["latency_ms"]["median"])' "$1"; }
# ort_fields JSON_FILE: "MEDIAN_MS OUTPUT_BYTES" of an ort_run.js --json document.
ort_fields() {
  "$PYTHON" -c '
import json, math, sys
doc = json.load(open(sys.argv[1]))
size = {"float64": 8, "int64": 8, "uint64": 8, "float32": 4, "int32": 4, "uint32": 4, "float16": 2, "int16": 2, "uint16": 2}
print("%.6f %d" % (doc["latency_ms"]["median"], sum(size.get(o["dtype"], 1) * math.prod(o["shape"]) for o in doc["outputs"])))' "$1"
}
# first_error FILE: the line of FILE that says what failed (ort_run.js may print warnings first).
first_error() {
  local line
  line=$(grep -m 1 -E '^(ort_run\.js|onnxtool|error)' "$1" || grep -v '^\s*$' "$1" | tail -n 1)
  printf '%s' "${line:-no message}" | tr '\t|' '  ' | cut -c1-140
}
# runs_for MS: the number of timed runs for a configuration whose probe run took MS.
runs_for() {
  awk -v ms="$1" -v budget="$BUDGET_MS" -v most="$RUNS" 'BEGIN {
    n = (ms > 0 ? int(budget / ms) : most); if (n > most) n = most; if (n < 3) n = 3; print n }'
}

# Output comparison, a batch of configurations at a time (one Python start, then their output
# folders are removed): reads "ID" lines, prints "ID<TAB>NOTE" for each one that differs.
compare_outputs() {
  "$PYTHON" -c '
import os, sys
import numpy as np
root = sys.argv[1]
for cid in sys.stdin.read().split():
    ours_dir, ort_dir = os.path.join(root, cid, "ours"), os.path.join(root, cid, "ort")
    notes = []
    for f in sorted(os.listdir(ort_dir)):
        name = f[:-len(".npy")]
        if not os.path.isfile(os.path.join(ours_dir, f)):
            notes.append(f"{name}: missing in ours")
            continue
        a, b = np.load(os.path.join(ours_dir, f)), np.load(os.path.join(ort_dir, f))
        if a.shape != b.shape or a.dtype != b.dtype:
            notes.append(f"{name}: ours {a.dtype}{list(a.shape)}, onnxruntime {b.dtype}{list(b.shape)}")
            continue
        if a.dtype.kind == "f":
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            both_nan = np.isnan(a64) & np.isnan(b64)
            diff = np.where(both_nan, 0.0, np.abs(a64 - b64))
            diff = np.where(np.isnan(diff), np.inf, diff)
            worst = float(diff.max()) if diff.size else 0.0
            scale = float(np.nanmax(np.abs(b64))) if b64.size and not np.isnan(b64).all() else 0.0
            if worst > max(1e-3 * scale, 1e-6):
                at = np.unravel_index(int(diff.argmax()), diff.shape)
                notes.append(f"{name}: max abs diff {worst:.3g} (max |ref| {scale:.3g}; at {list(at)}: ours {a64[at]:.6g},"
                             f" onnxruntime {b64[at]:.6g}; {int((diff > 1e-3 * scale).sum())} elements)")
        elif a.size and (a != b).any():
            notes.append(f"{name}: {int((a != b).sum())} of {a.size} elements differ")
    if notes:
        print(cid + "\t" + "; ".join(notes).replace("|", "/"))
' "$1"
}
pending=()
flush_compare() {
  [[ ${#pending[@]} -gt 0 ]] || return 0
  printf '%s\n' "${pending[@]}" | compare_outputs "$TMP/out" >>"$TMP/differ.tsv" ||
    say "the output comparison failed for ${pending[*]}"
  for id in "${pending[@]}"; do rm -rf "${TMP:?}/out/$id"; done
  pending=()
}

# results.tsv: ID, description, ours ms, onnxruntime ms, runs, error ("" when measured)
: >"$TMP/results.tsv"
: >"$TMP/differ.tsv"
failed=0
total=$(awk -v re="$FILTER" -F '\t' 'NF && (re == "" || ($1 " " $4) ~ re)' "$MANIFEST" | wc -l)
[[ $total -gt 0 ]] || die "no configuration matches '$FILTER'"
say "$total configurations, $RUNS runs at most, $THREADS thread(s)"
started=$SECONDS
done_count=0
while IFS=$'\t' read -r id model files desc; do
  [[ -z $id ]] && continue
  [[ -z $FILTER || "$id $desc" =~ $FILTER ]] || continue
  done_count=$((done_count + 1))
  args=()
  for f in $files; do args+=(--input "$f"); done
  record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$desc" "$1" "$2" "$3" "$4" "${5:-0}" >>"$TMP/results.tsv"; }
  if ! "$ONNXTOOL" check "$model" >"$TMP/err" 2>&1; then
    record "" "" "" "onnxtool check: $(grep -m 1 -i error "$TMP/err" | tr '\t|' '  ' | cut -c1-120)"
    failed=1
    continue
  fi
  mkdir -p "$TMP/out/$id"
  if ! "$ONNXTOOL" run "$model" "${args[@]}" --benchmark 1 --threads "$THREADS" --json --quiet \
        --output-dir "$TMP/out/$id/ours" >"$TMP/probe.json" 2>"$TMP/err"; then
    record "" "" "" "onnxtool run: $(first_error "$TMP/err")"
    failed=1
    rm -rf "${TMP:?}/out/$id"
    continue
  fi
  runs=$(runs_for "$(field_of "$TMP/probe.json")")
  if ! "$ONNXTOOL" run "$model" "${args[@]}" --benchmark "$runs" --threads "$THREADS" --json --quiet \
        >"$TMP/ours.json" 2>"$TMP/err"; then
    record "" "" "$runs" "onnxtool run: $(first_error "$TMP/err")"
    failed=1
    rm -rf "${TMP:?}/out/$id"
    continue
  fi
  ours=$(field_of "$TMP/ours.json")
  if ! node "$ORT_RUN" "$model" "${args[@]}" --benchmark "$runs" --threads "$THREADS" --json \
        --output-dir "$TMP/out/$id/ort" >"$TMP/ort.json" 2>"$TMP/err"; then
    record "$ours" "" "$runs" "onnxruntime: $(first_error "$TMP/err")"
    failed=1
    rm -rf "${TMP:?}/out/$id"
    continue
  fi
  read -r theirs out_bytes < <(ort_fields "$TMP/ort.json")
  record "$ours" "$theirs" "$runs" "" "$out_bytes"
  pending+=("$id")
  [[ ${#pending[@]} -ge 40 ]] && flush_compare
  if ((done_count % 25 == 0)); then
    say "$done_count/$total done, $((SECONDS - started)) s"
  fi
done <"$MANIFEST"
flush_compare
elapsed=$((SECONDS - started))

ort_version=$(sed -n 's/.*"version": "\([^"]*\)".*/\1/p' "$CACHE_DIR/ort/node_modules/onnxruntime-node/package.json" | head -n 1)
echo "## onnxtool run vs onnxruntime-node $ort_version, single-op models"
echo
echo "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git'), $(uname -sm), $(nproc) cores, $(date -u +%Y-%m-%d);"
echo "$THREADS thread(s), at most $RUNS timed runs$([[ -n $FILTER ]] && echo ", configurations matching '$FILTER'"); the sweep took ${elapsed} s."
echo "Median of the timed runs after one warm-up run, each side in one process per configuration;"
echo "onnxruntime with its default graph optimizations. ratio = onnxtool / onnxruntime (above 1:"
echo "onnxtool is slower). Rows where onnxruntime takes under 20 µs are not counted in the summary."
echo
"$PYTHON" -c '
import math, sys
results, differ = sys.argv[1:3]
diffs = {}
for line in open(differ):
    cid, note = line.rstrip("\n").split("\t", 1)
    diffs[cid] = note
rows = []
for line in open(results):
    cid, desc, ours, theirs, runs, error, out_bytes = line.rstrip("\n").split("\t")
    rows.append(dict(cid=cid, desc=desc, ours=float(ours) * 1000 if ours else None,
                     theirs=float(theirs) * 1000 if theirs else None, runs=runs, error=error,
                     big=int(out_bytes) >= 1 << 20, mib=int(out_bytes) / (1 << 20)))
for r in rows:
    r["ratio"] = r["ours"] / r["theirs"] if r["ours"] and r["theirs"] else None
    r["counted"] = r["ratio"] is not None and r["theirs"] >= 20
rows.sort(key=lambda r: (r["ratio"] is not None, -(r["ratio"] or 0)))
us = lambda v: "" if v is None else (f"{v:.1f}" if v < 1000 else f"{v:,.0f}")
print("| config | description | onnxtool µs | onnxruntime µs | ratio | runs | note |")
print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
for r in rows:
    notes = []
    if r["error"]:
        notes.append("failed: " + r["error"])
    elif not r["counted"]:
        notes.append("not counted (onnxruntime < 20 µs)")
    if r["big"]:
        notes.append("%.1f MiB output" % r["mib"])
    if r["cid"] in diffs:
        notes.append("outputs differ: " + diffs[r["cid"]])
    ratio = "" if r["ratio"] is None else "%.2f" % r["ratio"]
    cells = [r["cid"], r["desc"], us(r["ours"]), us(r["theirs"]), ratio, r["runs"], "; ".join(notes)]
    print("| " + " | ".join(cells) + " |")
print()
measured = [r for r in rows if r["ratio"] is not None]
counted = [r for r in measured if r["counted"]]
failed = len(rows) - len(measured)
print(f"{len(rows)} configurations: {len(measured)} measured, {failed} failed; {len(counted)} with onnxruntime >= 20 µs (counted).")
if counted:
    worst = max(counted, key=lambda r: r["ratio"])
    above = sum(r["ratio"] > 2 for r in counted)
    gmean = math.exp(sum(math.log(r["ratio"]) for r in counted) / len(counted))
    print("Counted: %d above 2x, worst %.2f (%s: %s); geometric mean ratio %.2f."
          % (above, worst["ratio"], worst["cid"], worst["desc"], gmean))
small = [r for r in counted if not r["big"]]
if small:
    gsmall = math.exp(sum(math.log(r["ratio"]) for r in small) / len(small))
    print("Counted with outputs under 1 MiB: %d, %d above 2x, geometric mean ratio %.2f."
          % (len(small), sum(r["ratio"] > 2 for r in small), gsmall))
if measured:
    gall = math.exp(sum(math.log(r["ratio"]) for r in measured) / len(measured))
    print(f"All measured rows (counted or not): geometric mean ratio {gall:.2f}.")
print(f"Outputs beyond 1e-3 relative of onnxruntime: {len(diffs)} configuration(s)" + (": " + ", ".join(sorted(diffs)) if diffs else "."))
' "$TMP/results.tsv" "$TMP/differ.tsv" || die "making the table failed"
exit "$failed"
