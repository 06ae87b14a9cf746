#!/usr/bin/env bash
# The README's CI gate recipe, run as written: the commands of the code block under "### CI
# gates" (continuation lines joined, comments dropped, `onnxtool` the binary under test) in a
# folder holding model.onnx (PaddleOCR v4 det) and samples/ (its calibration images from
# tests/make_quant_data.py, one renamed "a" for the optimize line). Every command must exit 0
# and gate.json must say ok: the steps agree with each other (a model quantize brought to its
# --accuracy-target passes compare's gates on the same samples), and the README does not drift
# from the flags the commands take.
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python numpy skimage
DET=$MODELS/ch_PP-OCRv4_det_infer.onnx
needs_file "$DET"
make_work readme_recipe

data=$("$PYTHON" "$SOURCE_DIR/tests/make_quant_data.py" "$CACHE_DIR" 2>"$WORK/data_err") ||
  skip_all "tests/make_quant_data.py could not make the samples: $(tail -1 "$WORK/data_err")"
calib=$data/ch_PP-OCRv4_det_infer/calib
needs_file "$calib/bw_text/x.npy"

mkdir -p "$WORK/gate/samples"
cp "$DET" "$WORK/gate/model.onnx"
for s in "$calib"/*/; do
  name=$(basename "$s")
  [[ $name == bw_text ]] && name=a  # the recipe's optimize line verifies on samples/a
  cp -r "$s" "$WORK/gate/samples/$name"
done
before=$(sha256sum <"$WORK/gate/model.onnx")

# The block: from the first ``` after "### CI gates" to the next ```.
awk '/^### CI gates/ { section = 1 } section && /^```/ { if (inside) exit; inside = 1; next } inside' \
  "$SOURCE_DIR/README.md" >"$WORK/block"
commands=()
line=""
while IFS= read -r raw; do
  raw=${raw%%#*}                               # a comment to the end of the line
  raw=$(sed -E 's/[[:space:]]+$//' <<<"$raw")
  if [[ $raw == *\\ ]]; then
    line+="${raw%\\} "
    continue
  fi
  line+=$raw
  [[ -n ${line// /} ]] && commands+=("$line")
  line=""
done <"$WORK/block"
[[ ${#commands[@]} -ge 4 ]] && ok || fail "the README's CI gate block has ${#commands[@]} commands, expected check, optimize, quantize and compare"
for verb in check optimize quantize compare; do
  printf '%s\n' "${commands[@]}" | grep -q "^onnxtool $verb " && ok || fail "the README's CI gate block has no '$verb' line"
done

for c in "${commands[@]}"; do
  [[ $c == onnxtool\ * ]] || { fail "a line of the block does not start with onnxtool: $c"; continue; }
  cmd="\"\$ONNXTOOL\" ${c#onnxtool }"
  if (cd "$WORK/gate" && eval "$cmd") >"$WORK/gate_out" 2>"$WORK/gate_err"; then
    ok
  else
    fail "README recipe: '$c' exit $?: $(tail -2 "$WORK/gate_err" | tr '\n' ' ')"
  fi
done

[[ $(sha256sum <"$WORK/gate/model.onnx") == "$before" ]] && ok || fail "the recipe changed model.onnx"
for f in opt.onnx int8.onnx gate.json; do
  [[ -s $WORK/gate/$f ]] && ok || fail "the recipe wrote no $f"
done
if "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] and d["gates_passed"] and d["samples"] >= 8, d
o = d["outputs"][0]
assert o["cosine"] >= 0.99 and all(g["pass"] for g in o["gates"]), o
' "$WORK/gate/gate.json" 2>"$WORK/py_err"; then ok; else fail "gate.json: $(tail -1 "$WORK/py_err")"; fi
# Quantized, not copied: the result holds integer weights and is smaller.
[[ $(stat -c %s "$WORK/gate/int8.onnx") -lt $(stat -c %s "$WORK/gate/model.onnx") ]] && ok || fail "int8.onnx is not smaller than model.onnx"
finish
