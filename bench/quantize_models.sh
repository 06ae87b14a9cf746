#!/usr/bin/env bash
# What the plain `onnxtool quantize` command gives on the runner benchmark's float models, judged
# by onnxruntime-node on inputs the calibration did not see, as a markdown table. Not a ctest
# entry.
#
#   bench/quantize_models.sh [RUNS]          (default 10 timed runs per latency)
#
# The models: the test set's PaddleOCR v4 det/rec, the direction classifier and Silero VAD
# legacy/v5/v6, and bench/models.sha256's ISNet (float16 weights), openWakeWord's three models,
# PaddleOCR en v3 det, ch v3 rec and en v4 rec, ddddocr det and rec and RetinaFace; not ISNet's
# quint8 twin and Moonshine's models (integer models already), but the transformers
# moonshine_encoder_float and moonshine_base_es_encoder_float: float32 Moonshine tiny and base
# (Spanish) encoders with the quantized ones' weights dequantized (bench/make_float_moonshine.py;
# their weights lie on an 8-bit grid, which flatters 8-bit weights a little). Samples, and the
# float encoders in models/bench/: bench/make_quant_bench_data.py (calib/ and eval/ share no
# source).
#
# Modes: static, dynamic, and weight-only4 / weight-only8 (`--mode weight-only --bits 4` / `8`:
# MatMul weights in blocks behind a blocked DequantizeLinear, float arithmetic) and nbits4 /
# nbits8 (the same weights as onnxruntime's com.microsoft MatMulNBits: `--format matmulnbits`).
# Each model runs MODES when it is set; by default every model runs static and dynamic, and the
# float Moonshine encoders (where the MatMuls are) also the four weight-only ones. Per model and mode:
#  - `onnxtool quantize M -o Q --mode MODE [--bits B] --calib-data calib/ --json --report
#    Q.report.json`, no other flag (dynamic and weight-only get the calibration samples too, so
#    that their reports have measured errors), timed as a whole process (/usr/bin/time, wall
#    seconds);
#  - accuracy: the fp32 and the quantized model on every eval sample in onnxruntime (ort_run.js
#    --batch, outputs saved as .npy); per output, the cosine over all eval samples (concatenated)
#    and the largest relative error max|a - b| / max|a|; the row shows the lowest cosine over the
#    outputs, and for outputs of at most 4 elements (a probability, a class pair) the largest
#    relative error instead, naming the output when the model has several;
#  - speed: onnxruntime's latency of the fp32 and the quantized model on the first eval sample
#    (`ort_run.js FP32 --against Q --benchmark RUNS --no-spin --threads THREADS`, runs alternating,
#    medians, as bench/quantize_speed.sh measures), speed-up = fp32 / quantized; and "over
#    rewritten fp32": the same against the float model as quantize rewrites it before quantizing
#    (static: opset 14 when below, for HardSwish; then `onnxtool optimize`'s default passes),
#    what the quantization itself gains -- the number the estimate is of (the PaddleOCR rec
#    models owe all their speed-up to the rewrites, which `onnxtool optimize` gives alone);
#  - from quantize's JSON: quantized nodes, the nodes kept in float (a "kept_float" key, or one
#    naming kept float nodes: its count; else "-"), "estimated_speedup" when present; file ratio
#    = quantized / original file size.
# ISNet's baseline is the float16-weight model as shipped (its "fp32" columns).
# A quantize that fails shows the last line of its error in the row; the others go on. Ends with
# the number of rows with cosine >= 0.99 and of rows slower than fp32 (among the models quantize
# changed: an unchanged one's speed-up is timing noise), and the wall time.
#
# Environment: ONNXTOOL_BUILD_DIR (default build/), ONNXTOOL_CACHE_DIR (default .cache/), THREADS
# (default 2), MODELS (a space-separated subset of the names above), MODES (the modes above,
# space-separated, for every model; default as said there), QUANTIZE_TIMEOUT (default 300 s: a
# quantize taking longer fails its row). About 9 minutes at RUNS=5 on 2 cores, a third of it ISNet
# (RUNS=10 adds about a minute of its timing); the float Moonshine's four modes add half a minute.
# Exit status: 0 when every row was measured, 1 when some failed, 2 when nothing could run.
set -uo pipefail

RUNS=${1:-10}
THREADS=${THREADS:-2}
DEFAULT_MODES="static dynamic"
MODES=${MODES:-}
QUANTIZE_TIMEOUT=${QUANTIZE_TIMEOUT:-300}
BENCH=quantize_models.sh
ALL_MODELS="ch_PP-OCRv4_det_infer ch_PP-OCRv4_rec_infer ch_ppocr_mobile_v2.0_cls_infer silero_vad_legacy
silero_vad_v5 silero_vad_v6 isnet_fp16 oww_melspectrogram oww_embedding oww_hey_jarvis en_PP-OCRv3_det
ch_PP-OCRv3_rec en_PP-OCRv4_rec ddddocr_det ddddocr_rec retinaface_mnet025 moonshine_encoder_float
moonshine_base_es_encoder_float"
MODELS=${MODELS:-$ALL_MODELS}

# ort_setup.sh builds onnxtool when its binary is missing. A build folder without the binary is
# most likely a build relinking it right now: wait for that (as before every quantize below)
# rather than start a second build in the same folder.
relinking=${ONNXTOOL_BUILD_DIR:-$(dirname "${BASH_SOURCE[0]}")/../build}
case $relinking in /*) ;; *) relinking=$(dirname "${BASH_SOURCE[0]}")/../$relinking ;; esac
wait_for() {  # FILE: up to 2 minutes until FILE is executable
  local i
  for ((i = 0; i < 60; i++)); do
    [[ -x $1 ]] && return 0
    sleep 2
  done
  return 1
}
[[ -d $relinking && ! -x $relinking/onnxtool ]] && wait_for "$relinking/onnxtool"
source "$(dirname "${BASH_SOURCE[0]}")/ort_setup.sh"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (apt-get install time)"
for mode in $MODES; do
  [[ $mode =~ ^(static|dynamic|weight-only4|weight-only8|nbits4|nbits8)$ ]] ||
    die "MODES takes static, dynamic, weight-only4, weight-only8, nbits4 and nbits8, got '$mode'"
done
[[ $QUANTIZE_TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "QUANTIZE_TIMEOUT must be a positive integer, got '$QUANTIZE_TIMEOUT'"
for model in $MODELS; do
  [[ " ${ALL_MODELS//$'\n'/ } " == *" $model "* ]] || die "unknown model '$model' in MODELS (one of: ${ALL_MODELS//$'\n'/ })"
done
"$ROOT/testdata/fetch_models.sh" --manifest "$ROOT/bench/models.sha256" >/dev/null || die "fetching bench/models.sha256 failed"
DATA=$(ONNXTOOL_BUILD_DIR=$BUILD_DIR "$PYTHON" "$ROOT/bench/make_quant_bench_data.py" "$CACHE_DIR") ||
  die "bench/make_quant_bench_data.py failed"

# ort_outputs MODEL SAMPLES_DIR OUT_DIR: onnxruntime's outputs for every sample folder of
# SAMPLES_DIR in OUT_DIR/<sample>/, one node process; prints the first failure and returns 1.
ort_outputs() {
  "$PYTHON" -c '
import json, os, sys
model, samples, out = sys.argv[1:4]
jobs = []
for s in sorted(os.listdir(samples)):
    folder = os.path.join(samples, s)
    inputs = {f[:-len(".npy")]: os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(".npy")}
    jobs.append({"model": model, "inputs": inputs, "output_dir": os.path.join(out, s)})
json.dump(jobs, sys.stdout)' "$1" "$2" "$3" >"$TMP/jobs.json" || { echo "cannot list $2"; return 1; }
  node "$ORT_RUN" --batch "$TMP/jobs.json" --threads "$THREADS" >"$TMP/jobs.out" 2>"$TMP/jobs.err" || {
    echo "ort_run.js: $(grep -v '^\s*$' "$TMP/jobs.err" | tail -n 1 | cut -c1-120)"
    return 1
  }
  "$PYTHON" -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
bad = [l for l in lines if not l["ok"]]
if bad or not lines:
    print(bad[0]["error"][:120] if bad else "no output")
    sys.exit(1)' "$TMP/jobs.out"
}

# accuracy FP32_DIR Q_DIR: "CELL<TAB>VERDICT", VERDICT "good" (lowest cosine >= 0.99), "low" or "rel"
# (every output small: no cosine shown).
accuracy() {
  "$PYTHON" -c '
import os, sys
import numpy as np
ref_root, q_root = sys.argv[1:3]
a, b, per_sample = {}, {}, {}
for s in sorted(os.listdir(ref_root)):
    for f in sorted(os.listdir(os.path.join(ref_root, s))):
        name = f[:-len(".npy")]
        x = np.load(os.path.join(ref_root, s, f)).astype(np.float64)
        qf = os.path.join(q_root, s, f)
        if not os.path.exists(qf):
            print("quantized model lacks output %s\tlow" % name)
            sys.exit(0)
        y = np.load(qf).astype(np.float64)
        if x.shape != y.shape:
            print("%s: shape %s, fp32 %s\tlow" % (name, list(y.shape), list(x.shape)))
            sys.exit(0)
        a.setdefault(name, []).append(x.ravel())
        b.setdefault(name, []).append(y.ravel())
        per_sample[name] = max(per_sample.get(name, 0), x.size)
cosines, rels = {}, {}
for name in a:
    x, y = np.concatenate(a[name]), np.concatenate(b[name])
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        cos = rel = float("nan")
    else:
        cos = 1.0 if nx == 0 and ny == 0 else (0.0 if nx == 0 or ny == 0 else float(x @ y / (nx * ny)))
        top = np.abs(x).max() if x.size else 0.0
        rel = float(np.abs(x - y).max() / top) if top > 0 else (0.0 if not np.abs(y).any() else float("inf"))
    (rels if per_sample[name] <= 4 else cosines)[name] = (cos, rel)
def worst(d, k, pick):  # NaN counts as the worst
    bad = -np.inf if pick is min else np.inf
    name = pick(d, key=lambda n: bad if np.isnan(d[n][k]) else d[n][k])
    return name, d[name][k]
parts = []
several = len(a) > 1
verdict = "rel"
if cosines:
    name, cos = worst(cosines, 0, min)
    parts.append("%.4f%s" % (cos, " (%s)" % name if several else ""))
    verdict = "good" if cos >= 0.99 else "low"  # False for nan
if rels:
    name, rel = worst(rels, 1, max)
    parts.append("rel err %.3g%s" % (rel, " (%s)" % name if several else ""))
print("%s\t%s" % ("; ".join(parts), verdict))' "$1" "$2"
}

# summary Q_JSON MODEL Q (an "unchanged" key, true or a reason, marks the node count): "QUANTIZED_NODES<TAB>KEPT_FLOAT<TAB>ESTIMATED_SPEEDUP<TAB>FILE_RATIO"
summary() {
  "$PYTHON" -c '
import json, os, sys
d = json.load(open(sys.argv[1]))
def find(doc, key):  # the first value of KEY at any depth
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        for v in doc.values():
            found = find(v, key)
            if found is not None:
                return found
    return None
def count(v):
    if isinstance(v, bool) or v is None:
        return "-"
    if isinstance(v, (int, float)):
        return "%d" % v
    if isinstance(v, dict):
        return count(v["count"]) if "count" in v else "%d" % len(v)
    return "%d" % len(v) if isinstance(v, list) else "-"
kept = find(d, "kept_float")
if kept is None:
    kept = next((v for k, v in d.items() if "kept" in k and "float" in k), None)
est = find(d, "estimated_speedup")
est = "%.2fx" % est if isinstance(est, (int, float)) and not isinstance(est, bool) else "-"
fb = d.get("file_bytes") or {}
if fb.get("before") and fb.get("after") is not None:
    ratio = fb["after"] / fb["before"]
else:
    ratio = os.path.getsize(sys.argv[3]) / os.path.getsize(sys.argv[2])
nodes = count(d.get("quantized_nodes")) + (" (unchanged)" if d.get("unchanged") else "")  # true, or the reason
print("%s\t%s\t%s\t%.3fx" % (nodes, count(kept), est, ratio))' "$1" "$2" "$3"
}

# modes_of MODEL: the modes MODEL runs (MODES, else the default ones and the float Moonshine's).
modes_of() {
  if [[ -n $MODES ]]; then
    echo "$MODES"
  elif [[ $1 == moonshine_*encoder_float ]]; then
    echo "$DEFAULT_MODES weight-only4 weight-only8 nbits4 nbits8"
  else
    echo "$DEFAULT_MODES"
  fi
}

# quantize MODEL Q MODE CALIB_DIR WORK_DIR: the plain command (weight-onlyB: --mode weight-only
# --bits B; nbitsB: the same with --format matmulnbits), timed (wall seconds in WORK_DIR/time), its JSON in WORK_DIR/q.json and its errors in
# WORK_DIR/q.err; returns its exit status.
quantize() {
  local mode=(--mode "$3")
  [[ $3 == weight-only* ]] && mode=(--mode weight-only --bits "${3#weight-only}")
  [[ $3 == nbits* ]] && mode=(--mode weight-only --bits "${3#nbits}" --format matmulnbits)
  /usr/bin/time -f '%e' -o "$5/time" timeout "$QUANTIZE_TIMEOUT" "$ONNXTOOL" quantize "$1" -o "$2" "${mode[@]}" \
    --calib-data "$4" --json --report "$2.report.json" >"$5/q.json" 2>"$5/q.err"
}

# rewritten MODEL MODE OUT: the float model as quantize rewrites it before quantizing (static:
# moved to opset 14 when below; then `onnxtool optimize` with its default passes), so that the
# speed-up of the quantization itself can be told from that of the graph rewrites; returns 1
# when a step fails.
rewritten() {
  local from=$1 opset
  if [[ $2 == static ]]; then
    opset=$("$ONNXTOOL" inspect "$1" --json | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["opset_import"].get("ai.onnx", 0))') || return 1
    if ((opset < 14)); then
      "$ONNXTOOL" convert "$1" --opset 14 -o "$3.opset14.onnx" --no-verify >/dev/null 2>&1 || return 1
      from=$3.opset14.onnx
    fi
  fi
  "$ONNXTOOL" optimize "$from" -o "$3" --no-verify --force >/dev/null 2>&1 || return 1
  rm -f "$3.opset14.onnx"
}

# latencies FP32 Q SAMPLE_DIR: "fp32_median quantized_median" (ms), or the error and status 1.
latencies() {
  local args=() f
  for f in "$3"/*.npy; do args+=(--input "$(basename "$f" .npy)=$f"); done
  if ! node "$ORT_RUN" "$1" --against "$2" "${args[@]}" --benchmark "$RUNS" --no-spin --threads "$THREADS" --json \
      >"$TMP/lat.json" 2>"$TMP/lat.err"; then
    grep -v '^\s*$' "$TMP/lat.err" | tail -n 1 | cut -c1-120
    return 1
  fi
  "$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1])); print("%.3f %.3f" % (d["latency_ms"]["median"], d["against_latency_ms"]["median"]))' "$TMP/lat.json"
}

built=$(stat -c %Y "$ONNXTOOL" 2>/dev/null)
rows=()
status=0
good=0 with_cosine=0 rel_only=() slower=0 changed=0 fixed=()
for name in $MODELS; do
  src=$CACHE_DIR/models/$name.onnx
  [[ -f $src ]] || src=$CACHE_DIR/models/bench/$name.onnx
  work=$TMP/$name
  mkdir -p "$work"
  # A model whose stored shape declarations contradict its own graph (ddddocr_rec: a value_info of
  # rank 2 where Reshape gives rank 3) fails check, and onnxtool writes nothing from a model that
  # fails check: it is quantized from a copy with the declarations fixed, and the table says so.
  if [[ -f $src ]] && ! "$ONNXTOOL" check "$src" >/dev/null 2>&1 &&
    "$ONNXTOOL" edit "$src" -o "$work/$name.fixed.onnx" --fix-declarations >/dev/null 2>&1; then
    src=$work/$name.fixed.onnx
    fixed+=("$name")
  fi
  if [[ ! -f $src || ! -d $DATA/$name/calib ]]; then
    rows+=("| $name | | failed: model or samples missing | | | | | | | | | |")
    status=1
    continue
  fi
  eval_dir=$DATA/$name/eval
  first=$(find "$eval_dir" -mindepth 1 -maxdepth 1 -type d | sort | head -n 1)
  fp32_error=""
  fp32_done=0
  for mode in $(modes_of "$name"); do
    q=$work/$name.$mode.onnx
    say "$name, $mode: quantize"
    if ! wait_for "$ONNXTOOL"; then
      rows+=("| $name | $mode | failed: $ONNXTOOL is missing | | | | | | | | | |")
      status=1
      continue
    fi
    quantize "$src" "$q" "$mode" "$DATA/$name/calib" "$work"
    rc=$?
    if [[ $rc == 126 || $rc == 127 ]] && wait_for "$ONNXTOOL"; then  # relinked under us: once more
      quantize "$src" "$q" "$mode" "$DATA/$name/calib" "$work"
      rc=$?
    fi
    [[ $rc == 124 ]] && echo "timed out after $QUANTIZE_TIMEOUT s" >>"$work/q.err"
    wall=$(tail -n 1 "$work/time")
    if [[ $rc != 0 ]]; then
      why=$(grep -v '^\s*$' "$work/q.err" | tail -n 1 | cut -c1-160)
      rows+=("| $name | $mode | failed (exit $rc): ${why//|/\\|} | | | | | | | | | $wall |")
      say "${rows[-1]}"
      status=1
      continue
    fi
    if ! info=$(summary "$work/q.json" "$src" "$q" 2>"$work/py.err"); then
      info=$'?\t?\t?\t?'
    fi
    IFS=$'\t' read -r nodes kept est ratio <<<"$info"

    say "$name, $mode: onnxruntime on $(find "$eval_dir" -mindepth 1 -maxdepth 1 -type d | wc -l) eval samples"
    if [[ $fp32_done == 0 ]]; then
      fp32_done=1
      fp32_error=$(ort_outputs "$src" "$eval_dir" "$work/fp32") || fp32_error=${fp32_error:-failed}
    fi
    verdict=""
    if [[ -n $fp32_error ]]; then
      cell="fp32 failed in onnxruntime: $fp32_error"
      status=1
    elif ! err=$(ort_outputs "$q" "$eval_dir" "$work/$mode"); then
      cell="onnxruntime failed: ${err:-?}"
      status=1
    elif ! acc=$(accuracy "$work/fp32" "$work/$mode" 2>"$work/py.err"); then
      cell="comparison failed: $(tail -n 1 "$work/py.err")"
      status=1
    else
      IFS=$'\t' read -r cell verdict <<<"$acc"
    fi
    case $verdict in
      good) with_cosine=$((with_cosine + 1)) good=$((good + 1)) ;;
      low) with_cosine=$((with_cosine + 1)) ;;
      rel) rel_only+=("$name/$mode") ;;
    esac

    say "$name, $mode: latency, $RUNS runs each"
    if lat=$(latencies "$src" "$q" "$first"); then
      read -r fp ms <<<"$lat"
      speedup=$(awk -v a="$fp" -v b="$ms" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
      if [[ $nodes != *unchanged* ]]; then  # an unchanged model's "speed-up" is the timing noise
        changed=$((changed + 1))
        awk -v s="$speedup" 'BEGIN { exit !(s < 1.0) }' && slower=$((slower + 1))
      fi
      speedup=${speedup}x
    else
      fp="failed: $lat" ms="" speedup=""
      status=1
    fi
    over=""
    if [[ $nodes == *unchanged* ]]; then
      over="-"
    elif rewritten "$src" "$mode" "$work/rewritten.onnx" && lat=$(latencies "$work/rewritten.onnx" "$q" "$first"); then
      read -r rw ms2 <<<"$lat"
      over=$(awk -v a="$rw" -v b="$ms2" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')
    else
      over="failed"
    fi
    rm -f "$work/rewritten.onnx"
    rows+=("| $name | $mode | $nodes | $kept | ${cell//|/\\|} | $fp | $ms | $speedup | $over | $est | $ratio | $wall |")
    say "${rows[-1]}"  # as it comes, for a run cut short
    rm -f "$q" "$q.data"
  done
  rm -rf "$work"
done
[[ ${#rows[@]} -gt 0 ]] || die "nothing was measured"

ort_version=$(sed -n 's/.*"version": "\([^"]*\)".*/\1/p' "$CACHE_DIR/ort/node_modules/onnxruntime-node/package.json" | head -n 1)
echo "## onnxtool quantize (plain) judged by onnxruntime-node $ort_version"
echo
echo "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git'), $(uname -sm), $(nproc) cores, $(date -u +%Y-%m-%d)."
echo "Accuracy over every eval sample; latency: median of $RUNS runs on the first eval sample, $THREADS threads."
echo
echo "| model | mode | quantized nodes | kept float | cosine (or rel err) on eval | ORT fp32 ms | quantized ms | speed-up | over rewritten fp32 | estimated speed-up | file ratio | quantize wall s |"
echo "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
[[ ${#fixed[@]} -gt 0 ]] && echo "(${fixed[*]}: stored shape declarations that contradict the graph, fixed first with edit --fix-declarations)"
echo
echo "cosine >= 0.99: $good of $with_cosine rows with a cosine${rel_only[*]:+ (judged by relative error only: ${rel_only[*]})}"
echo "speed-up < 1.0: $slower of $changed timed rows whose model changed"
echo "wall time: ${SECONDS} s"
if [[ $(stat -c %Y "$ONNXTOOL" 2>/dev/null) != "$built" ]]; then
  echo "warning: $ONNXTOOL was rebuilt during the run: the rows may come from two builds"
fi
exit $status
