#!/usr/bin/env bash
# Do two onnxtool binaries write the same bytes? For refactoring: runs optimize, convert (opset up
# and down, float16, external data) and quantize (dynamic, and static on the calibration samples
# of tests/make_quant_data.py) on the real models with both binaries, then compares the files.
#
#   scripts/same_outputs.sh OLD_ONNXTOOL NEW_ONNXTOOL
#
# Prints one line per output (same / DIFFERENT / both failed / ONE FAILED) and exits 1 when any
# output differs or only one binary failed. Needs the models of testdata/fetch_models.sh (and its
# calibration samples for the static cases; they are skipped when missing). Verification is off
# (--no-verify): it runs the model and only adds time; it does not change what is written.
set -uo pipefail

[[ $# -eq 2 && -x $1 && -x $2 ]] || { sed -n '2,11s/^# \{0,1\}//p' "$0"; exit 2; }
old=$(realpath "$1")
new=$(realpath "$2")
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache=${ONNXTOOL_CACHE_DIR:-$root/.cache}
models=$cache/models
calib=$cache/quant_data
[[ -d $models ]] || { echo "same_outputs.sh: no models in $models (testdata/fetch_models.sh)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool_same_outputs.XXXXXX")
trap 'rm -rf "$work"' EXIT

differ=0
# case LABEL ARGS...: ARGS with OUT standing for the output path; compares the output (and its
# external data file, when one is written) of both binaries.
case_() {
  local label=$1
  shift
  local side rc_old rc_new
  for side in old new; do
    mkdir -p "$work/$side"
    local args=()
    local a
    for a in "$@"; do args+=("${a//OUT/$work/$side/$label.onnx}"); done
    local bin=$old
    [[ $side == new ]] && bin=$new
    local rc=0
    "$bin" "${args[@]}" >"$work/$side/$label.log" 2>&1 || rc=$?
    if [[ $side == old ]]; then rc_old=$rc; else rc_new=$rc; fi
  done
  if [[ $rc_old -ne 0 && $rc_new -ne 0 ]]; then
    printf '%-44s both failed\n' "$label"
  elif [[ $rc_old -ne 0 || $rc_new -ne 0 ]]; then
    printf '%-44s ONE FAILED (old exit %s, new exit %s)\n' "$label" "$rc_old" "$rc_new"
    differ=1
  elif [[ ! -e $work/old/$label.onnx && ! -e $work/new/$label.onnx ]]; then
    printf '%-44s same (nothing written)\n' "$label"
  elif cmp -s "$work/old/$label.onnx" "$work/new/$label.onnx" &&
       { [[ ! -e $work/old/$label.onnx.data ]] || cmp -s "$work/old/$label.onnx.data" "$work/new/$label.onnx.data"; }; then
    printf '%-44s same (%s bytes)\n' "$label" "$(stat -c %s "$work/new/$label.onnx")"
  else
    printf '%-44s DIFFERENT\n' "$label"
    differ=1
  fi
}

for path in "$models"/*.onnx; do
  m=$(basename "$path" .onnx)
  case_ "$m.optimize" optimize "$path" -o OUT --no-verify
  case_ "$m.opset17" convert "$path" -o OUT --opset 17 --no-verify
  case_ "$m.opset11" convert "$path" -o OUT --opset 11 --no-verify
  case_ "$m.fp16" convert "$path" -o OUT --to-fp16 --keep-io-types --no-verify
  case_ "$m.external" convert "$path" -o OUT --external-data --size-threshold 1024
  case_ "$m.dynamic" quantize "$path" -o OUT --mode dynamic
  if [[ -d $calib/$m/calib ]]; then
    case_ "$m.static" quantize "$path" -o OUT --mode static --calib-data "$calib/$m/calib"
    # Forced: the plain command leaves some of these models float (estimated no faster).
    case_ "$m.static_conv" quantize "$path" -o OUT --mode static --calib-data "$calib/$m/calib" --op-types Conv
  fi
done
exit "$differ"
