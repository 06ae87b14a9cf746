#!/usr/bin/env bash
# The README's CI gate recipe, run as written: the commands of the code block under "## CI
# gates" (continuation lines joined, comments dropped, `onnxtool` the binary under test) in a
# folder holding model.onnx and samples/, for PaddleOCR v4 det and rec with their calibration
# samples from tests/make_quant_data.py (one renamed "a" for the optimize line). Every command
# must exit 0 and gate.json must say ok: the steps agree with each other (a model quantize
# brought to its --accuracy-target passes compare's gates on the same samples), and the README
# does not drift from the flags the commands take.
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python numpy skimage
needs_file "$MODELS/ch_PP-OCRv4_det_infer.onnx" "$MODELS/ch_PP-OCRv4_rec_infer.onnx"
make_work readme_recipe

data=$("$PYTHON" "$SOURCE_DIR/tests/make_quant_data.py" "$CACHE_DIR" 2>"$WORK/data_err") ||
  skip_all "tests/make_quant_data.py could not make the samples: $(tail -1 "$WORK/data_err")"

# The block: from the first ``` after the "CI gates" heading to the next ```.
awk '/^##+ CI gates/ { section = 1 } section && /^```/ { if (inside) exit; inside = 1; next } inside' \
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

# recipe MODEL FIRST_SAMPLE: the block in a folder of its own, FIRST_SAMPLE renamed "a".
recipe() {
  local model=$1 first=$2 dir=$WORK/$1 calib=$data/$1/calib c cmd s
  needs_file "$calib/$first"
  mkdir -p "$dir/samples"
  cp "$MODELS/$model.onnx" "$dir/model.onnx"
  for s in "$calib"/*/; do
    s=$(basename "$s")
    cp -r "$calib/$s" "$dir/samples/$([[ $s == "$first" ]] && echo a || echo "$s")"
  done
  local before
  before=$(sha256sum <"$dir/model.onnx")
  for c in "${commands[@]}"; do
    [[ $c == onnxtool\ * ]] || { fail "a line of the block does not start with onnxtool: $c"; continue; }
    cmd="\"\$ONNXTOOL\" ${c#onnxtool }"
    if (cd "$dir" && eval "$cmd") >"$WORK/gate_out" 2>"$WORK/gate_err"; then
      ok
    else
      fail "$model: README recipe: '$c' failed: $(tail -2 "$WORK/gate_err" | tr '\n' ' ')"
    fi
  done
  [[ $(sha256sum <"$dir/model.onnx") == "$before" ]] && ok || fail "$model: the recipe changed model.onnx"
  for f in opt.onnx int8.onnx gate.json; do
    [[ -s $dir/$f ]] && ok || fail "$model: the recipe wrote no $f"
  done
  if "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] and d["gates_passed"] and d["samples"] >= 6, d
for o in d["outputs"]:
    assert o["cosine"] >= 0.99 and all(g["pass"] for g in o["gates"]), o
' "$dir/gate.json" 2>"$WORK/py_err"; then ok; else fail "$model: gate.json: $(tail -1 "$WORK/py_err")"; fi
  # Quantized, not copied: the result holds integer weights and is smaller.
  [[ $(stat -c %s "$dir/int8.onnx") -lt $(stat -c %s "$dir/model.onnx") ]] && ok || fail "$model: int8.onnx is not smaller than model.onnx"
}

# Under the sanitizers, rec alone: det runs the same commands on a larger model and samples
# (the Release stage runs both).
((SANITIZED)) || recipe ch_PP-OCRv4_det_infer bw_text
recipe ch_PP-OCRv4_rec_infer line0
finish
