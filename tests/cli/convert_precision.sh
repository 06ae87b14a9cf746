#!/usr/bin/env bash
# `onnxtool convert --to-fp16 / --to-fp32`: the real models judged by onnxruntime-node
# (tests/ort/precision_vs_ort.py: cosine to fp32, the way back within 1e-2, check, file size),
# and the bad inputs: nothing to convert (exit 2, one line, no file), exclusive flags, input
# untouched.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
set -u
: "${ONNXTOOL:?set ONNXTOOL to the onnxtool binary}"
SOURCE_DIR=${ONNXTOOL_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
source "$SOURCE_DIR/tests/skip_lib.sh"
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$SOURCE_DIR/.cache}
PYTHON=/usr/bin/python3
MODEL=$CACHE_DIR/models/ch_ppocr_mobile_v2.0_cls_infer.onnx
if [[ ! -f $MODEL ]] || ! "$PYTHON" -c 'import onnx, numpy' 2>/dev/null; then
  skip_all "$MODEL or python3-onnx missing (testdata/fetch_models.sh)"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool_precision.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
expect() {  # LABEL RC -- CMD...
  local label=$1 rc=$2
  shift 3
  rm -f "$WORK/out.onnx"
  "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  local got=$?
  [[ $got -eq $rc ]] || { bad "$label: exit $got, expected $rc ($(head -c 300 "$WORK/stderr"))"; return; }
  if [[ $rc -ne 0 ]]; then
    [[ $(wc -l <"$WORK/stderr") -eq 1 ]] || { bad "$label: stderr is not one line"; return; }
    [[ ! -e $WORK/out.onnx ]] || { bad "$label: an output file was left"; return; }
  fi
  ok
}
before=$(sha256sum "$MODEL")

expect "to fp16" 0 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/half.onnx" --to-fp16 --keep-io-types
"$ONNXTOOL" convert "$MODEL" -o "$WORK/half_plain.onnx" --to-fp16 >/dev/null 2>&1
expect "fp16 model to fp16" 2 -- "$ONNXTOOL" convert "$WORK/half_plain.onnx" -o "$WORK/out.onnx" --to-fp16
grep -q "nothing to convert" "$WORK/stderr" && ok || bad "no 'nothing to convert' for an fp16 model: $(cat "$WORK/stderr")"
expect "fp32 model to fp32" 2 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/out.onnx" --to-fp32
expect "--no-preprocess alone" 2 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/out.onnx" --no-preprocess
expect "--block-ops with --to-fp32" 2 -- "$ONNXTOOL" convert "$MODEL" -o "$WORK/out.onnx" --to-fp32 --block-ops Conv
expect "back to fp32" 0 -- "$ONNXTOOL" convert "$WORK/half.onnx" -o "$WORK/back.onnx" --to-fp32
"$ONNXTOOL" check "$WORK/back.onnx" >/dev/null 2>&1 && ok || bad "the fp32 model does not pass check"
# The round trip computes what the original does, up to float16 weights (onnxtool's runner).
"$ONNXTOOL" compare "$MODEL" "$WORK/back.onnx" --random --seed 4 --shape x=1,3,48,192 --rtol 1e-2 --atol 1e-3 >"$WORK/cmp" 2>&1 &&
  ok || bad "the fp32 round trip drifted: $(head -2 "$WORK/cmp")"
[[ $(sha256sum "$MODEL") == "$before" ]] && ok || bad "the input model changed"

if command -v node >/dev/null && [[ -f $CACHE_DIR/ort/node_modules/onnxruntime-node/package.json ]]; then
  "$PYTHON" "$SOURCE_DIR/tests/ort/precision_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" >"$WORK/ort.log" 2>&1
  if judged $?; then
    ok
  else
    bad "fp16/fp32 conversions against onnxruntime:"
  fi
  cat "$WORK/ort.log"
else
  missing_data "onnxruntime-node: the onnxruntime checks"
fi
echo "$passed passed, $failed failed"
finish "$failed"
