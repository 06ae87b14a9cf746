#!/usr/bin/env bash
# One flag vocabulary across the commands (docs/cli.md): every command takes `--threads 1 --quiet
# --json` and then prints one JSON document on stdout and nothing on stderr; every old spelling
# of a renamed flag gives the stdout of the new name (and does what the new name does) plus
# exactly one stderr line naming the new name, --quiet or not.
#
# Needs testdata/tiny_cnn.onnx and Debian's python3 (its json module only).
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
M=$SOURCE_DIR/testdata/tiny_cnn.onnx  # image: float[N,3,32,32] -> conv1 -> relu1_out -> ... -> probs: float[N,10]
needs_file "$M" "$PYTHON"
make_work vocabulary

# Two calibration samples, samples/s0/image.npy and samples/s1/image.npy, of smooth values.
tiny_cnn_samples "$WORK/samples"

# json_of FILE: FILE's JSON without the keys that time the work (they differ from run to run),
# re-printed with sorted keys; nothing and status 1 when FILE is not one JSON document.
json_of() {
  "$PYTHON" -c '
import json, sys
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if not ("seconds" in k or k.endswith("_ms") or k == "elapsed")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
print(json.dumps(strip(json.load(open(sys.argv[1]))), sort_keys=True))' "$1" 2>/dev/null
}

# quiet_json LABEL ARGS...: onnxtool ARGS --threads 1 --quiet --json exits 0, prints one JSON
# document on stdout and nothing on stderr.
quiet_json() {
  local label=$1
  shift
  "$ONNXTOOL" "$@" --threads 1 --quiet --json >"$WORK/stdout" 2>"$WORK/stderr"
  local rc=$?
  if [[ $rc -ne 0 ]]; then
    fail "$label: exit $rc: $(head -c 400 "$WORK/stderr")"
  elif ! json_of "$WORK/stdout" >/dev/null; then
    fail "$label: stdout is not one JSON document: $(head -c 300 "$WORK/stdout")"
  elif [[ -s $WORK/stderr ]]; then
    fail "$label: stderr with --quiet: $(head -c 400 "$WORK/stderr")"
  else
    ok
  fi
}

quiet_json "inspect" inspect "$M"
quiet_json "check" check "$M"
quiet_json "devices" devices
quiet_json "diff" diff "$M" "$M"
quiet_json "run" run "$M" --random
quiet_json "compare" compare "$M" "$M" --random
quiet_json "convert" convert "$M" -o "$WORK/c.onnx" --opset 20
quiet_json "optimize" optimize "$M" -o "$WORK/o.onnx"
quiet_json "quantize" quantize "$M" -o "$WORK/q.onnx" --mode static --inputs "$WORK/samples"
quiet_json "extract" extract "$M" -o "$WORK/e.onnx" --from image --to relu1_out
quiet_json "edit" edit "$M" -o "$WORK/m.onnx" --set-metadata stage=test
quiet_json "reduce" reduce "$M" -o "$WORK/r.onnx" --command false
# --input-shape sizes the generated inputs of every command that makes them.
quiet_json "run --input-shape" run "$M" --random --input-shape image=2,3,32,32
if [[ $(json_of "$WORK/stdout") != *'"shape": [2, 10]'* ]]; then fail "run --input-shape: probs not [2, 10]: $(head -c 300 "$WORK/stdout")"; else ok; fi
quiet_json "convert --input-shape" convert "$M" -o "$WORK/c.onnx" --opset 20 --input-shape image=2,3,32,32
if ! grep -qF '[2,3,32,32]' "$WORK/stdout"; then fail "convert --input-shape: not verified on 2,3,32,32: $(head -c 300 "$WORK/stdout")"; else ok; fi
quiet_json "quantize --input-shape" quantize "$M" -o "$WORK/q.onnx" --mode dynamic --input-shape image=2,3,32,32

# alias LABEL OLD_NOTE -- NEW_ARGS... -- OLD_ARGS...: both exit alike with the same JSON on
# stdout (timings aside); the new spelling prints nothing on stderr, the old one exactly the
# line OLD_NOTE. With --quiet: the note is not silenced. Leaves the old spelling's stdout in
# $WORK/stdout.
alias() {
  local label=$1 note=$2
  shift 3
  local new=() old=()
  while [[ $1 != -- ]]; do new+=("$1"); shift; done
  shift
  old=("$@")
  "$ONNXTOOL" "${new[@]}" --quiet --json >"$WORK/new.out" 2>"$WORK/new.err"
  local new_rc=$?
  "$ONNXTOOL" "${old[@]}" --quiet --json >"$WORK/stdout" 2>"$WORK/stderr"
  local old_rc=$?
  if [[ $new_rc -ne $old_rc ]]; then
    fail "$label: exit $old_rc with the old name, $new_rc with the new: $(head -c 300 "$WORK/stderr") $(head -c 300 "$WORK/new.err")"
  elif [[ -s $WORK/new.err ]]; then
    fail "$label: the new name prints on stderr: $(head -c 300 "$WORK/new.err")"
  elif [[ $(cat "$WORK/stderr") != "$note" ]]; then
    fail "$label: stderr with the old name is not the one line '$note': $(head -c 400 "$WORK/stderr")"
  elif ! json_of "$WORK/new.out" >/dev/null || [[ $(json_of "$WORK/stdout") != "$(json_of "$WORK/new.out")" ]]; then
    fail "$label: stdout differs: $(diff <(json_of "$WORK/stdout") <(json_of "$WORK/new.out") | head -c 400)"
  else
    ok
  fi
}

alias "run --shape" "onnxtool run: --shape is now --input-shape (the old name still works)" -- \
  run "$M" --random --input-shape image=3,3,32,32 -- run "$M" --random --shape image=3,3,32,32
if [[ $(json_of "$WORK/stdout") != *'"shape": [3, 10]'* ]]; then fail "run --shape: probs not [3, 10]"; else ok; fi
alias "compare --shape" "onnxtool compare: --shape is now --input-shape (the old name still works)" -- \
  compare "$M" "$M" --random --input-shape image=3,3,32,32 -- compare "$M" "$M" --random --shape image=3,3,32,32
if [[ $(json_of "$WORK/stdout") != *'"elements": 30,'* ]]; then fail "compare --shape: probs not of 3 x 10 elements"; else ok; fi
alias "quantize --calib-data" "onnxtool quantize: --calib-data is now --inputs (the old name still works)" -- \
  quantize "$M" -o "$WORK/q.onnx" --mode static --inputs "$WORK/samples" -- \
  quantize "$M" -o "$WORK/q.onnx" --mode static --calib-data "$WORK/samples"
alias "extract --inputs/--outputs" "onnxtool extract: --inputs is now --from (the old name still works)
onnxtool extract: --outputs is now --to (the old name still works)" -- \
  extract "$M" -o "$WORK/e.onnx" --from image --to relu1_out -- extract "$M" -o "$WORK/e.onnx" --inputs image --outputs relu1_out
alias "optimize --input-shape" "onnxtool optimize: --input-shape is now --fix-input-shape (the old name still works; here it fixes the dims in the written model as before; elsewhere --input-shape only sizes generated inputs)" -- \
  optimize "$M" -o "$WORK/o.onnx" --fix-input-shape image=1,3,32,32 -- optimize "$M" -o "$WORK/o.onnx" --input-shape image=1,3,32,32
alias "edit --input-shape" "onnxtool edit: --input-shape is now --set-input-shape (the old name still works; here it sets the dims in the written model as before; elsewhere --input-shape only sizes generated inputs)" -- \
  edit "$M" -o "$WORK/m.onnx" --set-input-shape image=1,3,32,32 -- edit "$M" -o "$WORK/m.onnx" --input-shape image=1,3,32,32
# The old spellings of optimize and edit still write the dims into the model.
for model in o m; do
  "$ONNXTOOL" inspect "$WORK/$model.onnx" >"$WORK/inspect.txt" 2>&1
  if ! grep -qF 'image: float[1,3,32,32]' "$WORK/inspect.txt"; then fail "$model.onnx: the old --input-shape did not fix the dims"; else ok; fi
done

# One flag under two names, given two values: refused rather than one silently winning.
mkdir -p "$WORK/other/s0" && cp "$WORK/samples/s0/image.npy" "$WORK/other/s0/"
expect_tool "quantize --calib-data and --inputs" 2 "--calib-data and --inputs" -- \
  quantize "$M" -o "$OUT/q.onnx" --mode static --inputs "$WORK/samples" --calib-data "$WORK/other"
# extract without --from (or its old name): a usage error naming it.
expect_tool "extract without --from" 2 "--from" -- extract "$M" -o "$OUT/e.onnx" --to relu1_out

finish
