#!/usr/bin/env bash
# Same input, same bytes, whatever the thread count: every real model and its float16
# conversion run with --threads 1, 2 and 3 and give byte-identical outputs (the kernels split
# work across threads without changing any summation order). Every command that runs a model
# takes --threads, and writes the same bytes at 1, 2 and 3 threads; ONNXTOOL_THREADS sets the
# default and is checked.
#
# Environment: ONNXTOOL (the binary); the real models (testdata/fetch_models.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_work threads

# same_across_threads LABEL MODEL ARGS...: runs at 1, 2 and 3 threads and compares the outputs.
same_across_threads() {
  local label=$1 model=$2
  shift 2
  local t
  for t in 1 2 3; do
    if ! "$ONNXTOOL" run "$model" --random --threads "$t" --output-dir "$WORK/t$t" "$@" >/dev/null 2>"$WORK/stderr"; then
      fail "$label --threads $t: $(cat "$WORK/stderr")"
      return
    fi
  done
  if diff -r "$WORK/t1" "$WORK/t2" >/dev/null && diff -r "$WORK/t1" "$WORK/t3" >/dev/null; then
    ok
  else
    fail "$label: outputs differ between thread counts"
  fi
  rm -rf "$WORK"/t1 "$WORK"/t2 "$WORK"/t3
}

for spec in "ch_ppocr_mobile_v2.0_cls_infer x=1,3,48,192" "ch_PP-OCRv4_rec_infer x=1,3,48,160" \
  "ch_PP-OCRv4_det_infer x=1,3,96,128" "silero_vad_v5 input=1,512"; do
  read -r name shape <<<"$spec"
  if [[ ! -f $MODELS/$name.onnx ]]; then
    missing_data "$MODELS/$name.onnx"
    continue
  fi
  args=(--input-shape "$shape")
  if [[ $name == silero* ]]; then
    # Silero takes its 16 kHz branch only with its real sample rate, an int64 scalar.
    has_python numpy || { missing_data "$PYTHON with numpy (Silero's sample rate)"; continue; }
    "$PYTHON" -c 'import numpy as np, sys; np.save(sys.argv[1], np.array(16000, dtype=np.int64))' "$WORK/sr.npy"
    args+=(--input "sr=$WORK/sr.npy")
  fi
  same_across_threads "$name" "$MODELS/$name.onnx" "${args[@]}"
  if "$ONNXTOOL" convert "$MODELS/$name.onnx" -o "$WORK/$name.fp16.onnx" --to-fp16 --no-verify >/dev/null 2>"$WORK/stderr"; then
    same_across_threads "$name float16" "$WORK/$name.fp16.onnx" "${args[@]}"
  else
    fail "$name: convert --to-fp16: $(cat "$WORK/stderr")"
  fi
done

# Beside busy processes the pool plans and runs for fewer threads than asked (it samples the
# machine's runnable tasks every few ms), from one op to the next within a run: the outputs are
# still those of one thread on an idle machine.
det=$MODELS/ch_PP-OCRv4_det_infer.onnx
if [[ -f $det ]]; then
  busy=()
  for _ in 1 2 3; do
    (while :; do :; done) &
    busy+=($!)
  done
  "$ONNXTOOL" run "$det" --random --input-shape x=1,3,480,640 --threads 3 --output-dir "$WORK/busy3" >/dev/null 2>"$WORK/stderr"
  status=$?
  kill -9 "${busy[@]}" 2>/dev/null
  wait "${busy[@]}" 2>/dev/null
  if [[ $status -ne 0 ]]; then
    fail "det beside busy processes: $(cat "$WORK/stderr")"
  elif "$ONNXTOOL" run "$det" --random --input-shape x=1,3,480,640 --threads 1 --output-dir "$WORK/idle1" >/dev/null 2>&1 &&
    diff -r "$WORK/idle1" "$WORK/busy3" >/dev/null; then
    ok
  else
    fail "det: outputs beside busy processes at --threads 3 differ from --threads 1"
  fi
else
  missing_data "$det"
fi

# Every command that runs a model: --threads accepted, the written model the same bytes.
cls=$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx
if [[ -f $cls ]]; then
  # same_written LABEL ARGS...: ARGS end with -o; the file written at 1, 2 and 3 threads.
  same_written() {
    local label=$1 t
    shift
    for t in 1 2 3; do
      if ! "$ONNXTOOL" "$@" "$WORK/w$t.onnx" --threads "$t" >/dev/null 2>"$WORK/stderr"; then
        fail "$label --threads $t: $(head -c 300 "$WORK/stderr")"
        return
      fi
    done
    cmp -s "$WORK/w1.onnx" "$WORK/w2.onnx" && cmp -s "$WORK/w1.onnx" "$WORK/w3.onnx" && ok ||
      fail "$label: the model written differs between thread counts"
  }
  same_written optimize optimize "$cls" -o
  same_written "convert --to-fp16" convert "$cls" --to-fp16 -o
  same_written "quantize (dynamic)" quantize "$cls" --mode dynamic -o
  same_written "edit --producer-name" edit "$cls" --producer-name t -o
  io=$("$ONNXTOOL" inspect "$cls" --json |
    "$PYTHON" -c 'import json, sys; d = json.load(sys.stdin); print(d["inputs"][0]["name"], d["outputs"][0]["name"])')
  same_written extract extract "$cls" --from "${io% *}" --to "${io#* }" -o
  for t in 1 3; do
    expect_tool "compare --threads $t" 0 "" -- compare "$cls" "$WORK/w1.onnx" --threads "$t"
  done
  # ONNXTOOL_THREADS: the default of every command, checked like a flag.
  ONNXTOOL_THREADS=2 "$ONNXTOOL" run "$cls" --random --output-dir "$WORK/env2" >/dev/null 2>&1 &&
    "$ONNXTOOL" run "$cls" --random --threads 1 --output-dir "$WORK/env1" >/dev/null 2>&1 &&
    diff -r "$WORK/env1" "$WORK/env2" >/dev/null && ok || fail "ONNXTOOL_THREADS=2: outputs differ from --threads 1"
  ONNXTOOL_THREADS=2 "$ONNXTOOL" run "$cls" --random --json 2>/dev/null | grep -q '"threads": 2' && ok ||
    fail "ONNXTOOL_THREADS=2: run --json does not report 2 threads"
  for bad in abc 0 -1 5000 2x; do
    expect "ONNXTOOL_THREADS=$bad" 2 "ONNXTOOL_THREADS" -- env ONNXTOOL_THREADS=$bad "$ONNXTOOL" run "$cls" --random
  done
  expect_tool "--threads 0" 2 "--threads" -- optimize "$cls" -o "$OUT/o.onnx" --threads 0
else
  missing_data "$cls"
fi

# Same bytes whatever order the allocator hands out memory in: maps keyed by node or value
# addresses once ordered quantize's groups, so another heap layout listed other nodes and could
# have named restored nodes differently. glibc without its per-thread cache reuses memory in
# another order; the model written and everything printed must not change. (Under ASan its own
# allocator ignores the tunable: the check then proves nothing, and passes.)
calib=$CACHE_DIR/quant_data/ch_ppocr_mobile_v2.0_cls_infer/calib
if [[ -f $cls && -d $calib ]]; then
  for spec in "static:--mode static --inputs $calib --accuracy-target 0.999" "dynamic:--mode dynamic" \
    "optimize:" "fp16:--to-fp16"; do
    label=${spec%%:*}
    read -ra extra <<<"${spec#*:}"
    case $label in
      optimize) cmd=(optimize "$cls") ;;
      fp16) cmd=(convert "$cls") ;;
      *) cmd=(quantize "$cls") ;;
    esac
    "$ONNXTOOL" "${cmd[@]}" "${extra[@]}" -o "$WORK/heap_a.onnx" >"$WORK/heap_a.txt" 2>&1
    GLIBC_TUNABLES=glibc.malloc.tcache_count=0 "$ONNXTOOL" "${cmd[@]}" "${extra[@]}" -o "$WORK/heap_b.onnx" >"$WORK/heap_b.txt" 2>&1
    # The same text but for the file name and the times taken.
    sed -i -E 's/heap_b/heap_a/g; s/[0-9]+(\.[0-9]+)? ?(s|ms)\b/TIME/g' "$WORK/heap_b.txt"
    sed -i -E 's/[0-9]+(\.[0-9]+)? ?(s|ms)\b/TIME/g' "$WORK/heap_a.txt"
    cmp -s "$WORK/heap_a.onnx" "$WORK/heap_b.onnx" && cmp -s "$WORK/heap_a.txt" "$WORK/heap_b.txt" && ok ||
      fail "$label: another heap order wrote or printed something else: $(diff "$WORK/heap_a.txt" "$WORK/heap_b.txt" | head -c 300)"
  done
else
  missing_data "$calib (testdata/fetch_models.sh)"
fi
finish
