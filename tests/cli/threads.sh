#!/usr/bin/env bash
# Same input, same bytes, whatever the thread count: every real model and its float16
# conversion run with --threads 1, 2 and 3 and give byte-identical outputs (the kernels split
# work across threads without changing any summation order).
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
  args=(--shape "$shape")
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
finish
