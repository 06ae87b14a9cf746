#!/usr/bin/env bash
# The first-day frictions of issue 20: a mistyped command or option gets the nearest name
# suggested, `onnxtool` alone lists the commands, `onnxtool help [COMMAND]`, `convert MODEL
# --in-place` without -o (atomic, the input valid after it), flags that would be ignored refused
# with one line (exit 2), hints that name only flags the command has, and --json failures as JSON
# on stdout.
#
# Needs only the models in testdata/ (no fetched data, no python).
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
M=$SOURCE_DIR/testdata/tiny_cnn.onnx  # image: float[1,3,32,32]
IF=$SOURCE_DIR/testdata/tiny_if.onnx  # x: float[3], cond: bool[]
needs_file "$M" "$IF"
make_work first_day
before=$(sha256sum "$M" "$IF")

# lacks LABEL NEEDLE: the last command's stderr does not hold NEEDLE.
lacks() {
  if grep -qF -- "$2" "$WORK/stderr"; then fail "$1: stderr names '$2': $(cat "$WORK/stderr")"; else ok; fi
}

# write_npy FILE DESCR SHAPE DATA_FILE: a .npy (format 1.0) of DESCR ('<f4') and SHAPE ('3,' or
# '1, 3, 32, 32') holding the bytes of DATA_FILE, written without numpy.
write_npy() {
  local header="{'descr': '$2', 'fortran_order': False, 'shape': ($3), }"
  while (((10 + ${#header} + 1) % 64)); do header+=" "; done
  local n=$((${#header} + 1))
  {
    printf '\x93NUMPY\x01\x00'
    printf "\\x$(printf %02x $((n & 255)))\\x$(printf %02x $((n >> 8)))"
    printf '%s\n' "$header"
    cat "$4"
  } >"$1"
}
printf '\x00\x00\x80\x3f\x00\x00\x80\x3f\x00\x00\x80\x3f' >"$WORK/ones.bin"
write_npy "$WORK/x.npy" '<f4' '3,' "$WORK/ones.bin"
head -c $((3 * 32 * 32 * 4)) /dev/zero >"$WORK/zeros.bin"
mkdir -p "$WORK/calib/s0" "$WORK/calib/s1" "$WORK/calib_missing/s0"
write_npy "$WORK/calib/s0/image.npy" '<f4' '1, 3, 32, 32' "$WORK/zeros.bin"
cp "$WORK/calib/s0/image.npy" "$WORK/calib/s1/image.npy"
"$ONNXTOOL" run "$M" --inputs "$WORK/calib/s0" >/dev/null 2>&1 && ok || fail "the hand-written .npy does not load"

# --- 1. mistyped commands and options
expect_tool "mistyped command" 2 "unknown command 'inspec'; did you mean 'inspect'?" -- inspec "$M"
expect_tool "swapped letters" 2 "did you mean 'compare'?" -- comapre "$M" "$M"
expect_tool "a word no command is near" 2 "unknown command 'xyzzy'; the commands: inspect, check" -- xyzzy "$M"
lacks "a word no command is near" "did you mean"
expect_tool "a model where the command goes" 2 "is not a command; the command comes first" -- "$M"
expect_tool "mistyped option" 2 "onnxtool inspect: unknown option --jsn; did you mean --json?" -- inspect --jsn "$M"
expect_tool "mistyped option, its value left behind" 2 "unknown option --mdoe; did you mean --mode?" -- \
  quantize "$M" -o "$OUT/q.onnx" --mdoe dynamic
expect_tool "an abbreviation" 2 "did you mean --external-data?" -- convert "$M" -o "$OUT/c.onnx" --external
expect_tool "an option no option is near" 2 "onnxtool inspect: unknown option --frobnicate (see --help)" -- inspect --frobnicate "$M"
lacks "an option no option is near" "did you mean"
expect_tool "a command's option before the command" 2 "did you mean \`onnxtool inspect --json\`" -- --json inspect "$M"
expect_tool "an option of another command" 2 "onnxtool run: --calib-data is an option of onnxtool quantize, not of run" -- \
  run "$M" --calib-data "$WORK/calib"
expect_tool "an option of another command, as NAME=VALUE" 2 "onnxtool quantize: --benchmark is an option of onnxtool run, not of quantize" -- \
  quantize "$M" -o "$OUT/q.onnx" --mode dynamic --benchmark=3
expect_tool "an option of several other commands" 2 "onnxtool inspect: --seed is an option of " -- inspect "$M" --seed 1
lacks "an option of several other commands" "unknown option"
expect_tool "a near miss still suggested" 2 "onnxtool run: unknown option --benchmark-x; did you mean --benchmark?" -- \
  run "$M" --random --benchmark-x 3
expect_tool "an option before its command, the command named" 2 "onnxtool inspect: unknown option --json" -- --json inspect "$M"
expect_tool "a parse error names its command" 2 "onnxtool run: MODEL is required (see --help)" -- run
expect_tool "a value out of range, the command named" 2 "onnxtool run: --max-dump-files: '0' is outside [1, 100000000]" -- \
  run "$M" --random --max-dump-files 0
expect_tool "a flag given twice, said plainly" 2 "onnxtool run: --seed: given 2 times; it takes one value" -- \
  run "$M" --random --seed 1 --seed 2
expect "no command" 2 "name a command: inspect, check, run, convert, optimize, quantize, compare, diff, devices, extract, edit, reduce, help" -- "$ONNXTOOL"

# run's summary counts NaN and Inf apart from min/max/mean (it printed "mean -nan").
{ printf '\x00\x00\xc0\x7f'; head -c $((3 * 32 * 32 * 4 - 4)) /dev/zero; } >"$WORK/nan.bin"
write_npy "$WORK/nan.npy" '<f4' '1, 3, 32, 32' "$WORK/nan.bin"
"$ONNXTOOL" run "$M" --input image="$WORK/nan.npy" >"$WORK/stdout" 2>&1
grep -q "(10 NaN, 0 Inf: not in min/max/mean)" "$WORK/stdout" && ! grep -q -- "-nan" "$WORK/stdout" && ok ||
  fail "run on a NaN input: $(cat "$WORK/stdout")"
"$ONNXTOOL" run "$M" --input image="$WORK/nan.npy" --json | grep -q '"nan_count": 10' && ok || fail "run --json: no nan_count 10"

# --- 2. help
expect_tool "help" 0 "Subcommands:" -- help
# Help names the tool `onnxtool` however it was reached, and shows no validator noise.
for c in run quantize compare convert; do
  "$ONNXTOOL" "$c" --help >"$WORK/help.txt" 2>&1
  grep -q "^Usage: onnxtool $c " "$WORK/help.txt" && ok || fail "$c --help: $(grep '^Usage' "$WORK/help.txt")"
  grep -q "NUMBER in" "$WORK/help.txt" && fail "$c --help prints validator ranges: $(grep -m1 'NUMBER in' "$WORK/help.txt")" || ok
done
grep -q "quantize" "$WORK/stdout" && ok || fail "help lists no quantize: $(cat "$WORK/stdout")"
expect_tool "help COMMAND" 0 "--json" -- help inspect
cp "$WORK/stdout" "$WORK/help_inspect"
"$ONNXTOOL" inspect --help >"$WORK/dash_help" 2>&1
cmp -s "$WORK/help_inspect" "$WORK/dash_help" && ok || fail "help inspect differs from inspect --help: $(diff "$WORK/help_inspect" "$WORK/dash_help")"
expect_tool "help of an unknown command" 2 "onnxtool help: unknown command 'nosuch'" -- help nosuch
expect_tool "help of a mistyped command" 2 "did you mean 'quantize'?" -- help quantise

# --- 3. convert --in-place
D=$WORK/inplace
mkdir -p "$D"
cp "$M" "$D/m.onnx"
expect_tool "convert --in-place without -o" 0 "wrote $D/m.onnx" -- convert "$D/m.onnx" --in-place --opset 14
"$ONNXTOOL" inspect "$D/m.onnx" | grep -q "ai.onnx=14" && ok || fail "the model in place is not at opset 14"
[[ $(ls -A "$D") == m.onnx ]] && ok || fail "convert --in-place left $(ls -A "$D" | tr '\n' ' ')"
expect_tool "the model in place passes check" 0 "valid" -- check "$D/m.onnx"
expect_tool "the model in place computes what the original does" 0 "within tolerance" -- compare "$M" "$D/m.onnx"
# External data in place: weights out to m.onnx.data, then a conversion that rewrites that same
# side file while reading from it.
expect_tool "convert --in-place --external-data" 0 "m.onnx.data" -- \
  convert "$D/m.onnx" --in-place --external-data --size-threshold 0
expect_tool "convert --in-place over its own external data" 0 "wrote" -- convert "$D/m.onnx" --in-place --opset 13
expect_tool "... still passes check" 0 "valid" -- check "$D/m.onnx"
expect_tool "... and computes what the original does" 0 "within tolerance" -- compare "$M" "$D/m.onnx"
sum=$(sha256sum "$D/m.onnx")
expect_tool "convert without -o or --in-place" 2 "no output: pass -o OUT, or --in-place" -- convert "$D/m.onnx" --opset 15
expect_tool "--in-place with another output" 2 "is not the input model" -- convert "$D/m.onnx" --in-place -o "$OUT/other.onnx"
[[ $(sha256sum "$D/m.onnx") == "$sum" ]] && ok || fail "a refused convert changed the input"

# --- 4. flags that would be ignored
Q=("$ONNXTOOL" quantize "$M" -o "$OUT/q.onnx")
expect "--percentile without --calib-method percentile" 2 "--percentile goes with --calib-method percentile" -- \
  "${Q[@]}" --mode static --inputs "$WORK/calib" --percentile 99.9
expect "--moving-average with entropy" 2 "--moving-average averages minmax ranges" -- \
  "${Q[@]}" --mode static --inputs "$WORK/calib" --calib-method entropy --moving-average 0.5
for flag in "--calib-method minmax" "--percentile 99" "--moving-average 0.1" "--activation-type int8"; do
  # shellcheck disable=SC2086
  expect "dynamic $flag" 2 "${flag%% *} is for --mode static; --mode dynamic would ignore it" -- \
    "${Q[@]}" --mode dynamic --inputs "$WORK/calib" $flag
done
expect "dynamic --format qoperator" 2 "--format is for --mode static or weight-only; --mode dynamic would ignore it" -- \
  "${Q[@]}" --mode dynamic --inputs "$WORK/calib" --format qoperator
expect "weight-only --calib-method" 2 "--calib-method is for --mode static; --mode weight-only would ignore it" -- \
  "${Q[@]}" --mode weight-only --calib-method entropy
expect "weight-only --per-tensor" 2 "--per-tensor is for --mode dynamic or static" -- "${Q[@]}" --mode weight-only --per-tensor
expect "--bits outside weight-only, at its default" 2 "--bits is for --mode weight-only" -- "${Q[@]}" --mode dynamic --bits 4
expect "--calib-samples without --inputs" 2 "--calib-samples: without --inputs the accuracy is measured on 4 random samples" -- \
  "${Q[@]}" --mode dynamic --calib-samples 2
expect "--error-samples without --inputs" 2 "--error-samples: without --inputs" -- \
  "${Q[@]}" --mode dynamic --error-samples 2 --accuracy-target 0.9
expect "--seed with --inputs" 2 "--seed: for the random samples" -- "${Q[@]}" --mode dynamic --inputs "$WORK/calib" --seed 3
expect "--no-verify with --accuracy-target" 2 "--no-verify measures nothing" -- "${Q[@]}" --mode dynamic --no-verify --accuracy-target 0.9
expect "--moving-average 0" 2 "--moving-average: '0' is outside (0, 1]" -- "${Q[@]}" --mode static --inputs "$WORK/calib" --moving-average 0
expect "--calib-samples 0" 2 "--calib-samples: '0' is outside" -- "${Q[@]}" --mode static --inputs "$WORK/calib" --calib-samples 0
# What stays accepted: samples to measure dynamic mode's errors on, and the percentile with its method.
expect "dynamic --inputs --calib-samples" 0 "wrote" -- "${Q[@]}" --mode dynamic --inputs "$WORK/calib" --calib-samples 1
expect "static percentile" 0 "wrote" -- "${Q[@]}" --mode static --inputs "$WORK/calib" --calib-method percentile --percentile 99.9
expect_tool "run --seed without --random" 2 "--seed: for random inputs only; add --random" -- run "$M" --seed 3 --inputs "$WORK/calib/s0"
expect_tool "run --input-shape without --random" 2 "--input-shape: for random inputs only" -- run "$M" --input-shape image=1,3,32,32 --inputs "$WORK/calib/s0"
expect_tool "run --random --seed" 0 "probs" -- run "$M" --random --seed 3
expect_tool "compare --seed with files" 2 "--seed: the inputs come from --inputs; add --random" -- \
  compare "$M" "$M" --inputs "$WORK/calib/s0" --seed 1
expect_tool "compare --samples without files needs no --random" 0 "within tolerance" -- compare "$M" "$M" --samples 2
expect_tool "compare --device beside --device-a and --device-b" 2 "--device would be unused" -- \
  compare "$M" --device cpu --device-a cpu --device-b cpu
expect_tool "convert --seed with nothing to verify" 2 "--seed: only --opset, --to-fp16 and --to-fp32 are verified" -- \
  convert "$M" -o "$OUT/c.onnx" --seed 1
expect_tool "convert --size-threshold without --external-data" 2 "--size-threshold goes with --external-data" -- \
  convert "$M" -o "$OUT/c.onnx" --size-threshold 10
expect_tool "convert --data-file with --inline-external-data" 2 "--data-file: --inline-external-data writes no side file" -- \
  convert "$M" -o "$OUT/c.onnx" --inline-external-data --data-file c.data
expect_tool "convert --seed with given inputs" 2 "--seed seeds random verification inputs; with --inputs there are none" -- \
  convert "$M" -o "$OUT/c.onnx" --opset 14 --inputs "$WORK/calib/s0" --seed 2
expect_tool "convert --input-shape with given inputs" 2 "--input-shape sizes random verification inputs" -- \
  convert "$M" -o "$OUT/c.onnx" --opset 14 --inputs "$WORK/calib/s0" --input-shape image=1,3,32,32

# --- 5. hints name the command's own flags
expect "quantize: a sample without an input" 2 "--inputs sample s0: input 'image' is not given: $WORK/calib_missing/s0 has no image.npy or image.pb" -- \
  "${Q[@]}" --mode static --inputs "$WORK/calib_missing"
lacks "quantize: a sample without an input" "--random"
lacks "quantize: a sample without an input" "--input "
expect_tool "convert: a verification input left out" 2 "input 'cond' is not given (use --input cond=FILE or --inputs DIR)" -- \
  convert "$IF" -o "$OUT/c.onnx" --opset 15 --input "x=$WORK/x.npy"
lacks "convert: a verification input left out" "--random"
expect_tool "run: an input left out" 2 "(use --input cond=FILE, --inputs DIR or --random)" -- run "$IF" --input "x=$WORK/x.npy"

# With --json a failure is a JSON document on stdout too (the one line stays on stderr), and
# every document carries schema_version.
json_field() {  # FIELD: the last command's stdout parsed as JSON, FIELD printed
  "$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$WORK/stdout" "$1" 2>/dev/null
}
if has_python json; then
  expect_tool "check --json of a missing file" 2 "no such file" -- check "$WORK/missing.onnx" --json
  [[ $(json_field exit_code) == 2 && $(json_field ok) == False && $(json_field error) == *"no such file"* ]] && ok ||
    fail "check --json of a missing file: stdout is not the JSON failure: $(head -c 300 "$WORK/stdout")"
  expect_tool "a usage error with --json" 2 "unknown option --bogus" -- inspect "$M" --json --bogus
  [[ $(json_field command) == inspect && $(json_field exit_code) == 2 ]] && ok ||
    fail "a usage error with --json: stdout is not the JSON failure: $(head -c 300 "$WORK/stdout")"
  expect_tool "inspect --json" 0 "" -- inspect "$M" --json
  [[ $(json_field schema_version) == 2 ]] && ok || fail "inspect --json has no schema_version"
else
  missing_data "$PYTHON (the --json documents)"
fi

# Several models in one check: each checked, the exit code the worst of them.
expect_tool "check of two valid models" 0 "2 models: all valid" -- check "$M" "$IF"
expect_tool "check of a valid model and a missing one" 2 "missing.onnx: no such file" -- check "$M" "$WORK/missing.onnx"
grep -q "tiny_cnn.onnx: valid" "$WORK/stdout" && ok || fail "check of several models: the valid one is not reported: $(cat "$WORK/stdout")"
if has_python json; then
  "$ONNXTOOL" check "$M" "$WORK/missing.onnx" --json >"$WORK/stdout" 2>/dev/null
  [[ $? == 2 && $(json_field exit_code) == 2 && $(json_field valid) == False ]] && ok ||
    fail "check --json of several models: $(head -c 300 "$WORK/stdout")"
else
  missing_data "$PYTHON (the --json document of several models)"
fi

# check --max-errors takes a count: -1 (its internal "no limit") is refused like any negative.
expect_tool "check --max-errors -1" 2 "--max-errors" -- check "$M" --max-errors -1

# Flags that only restate the default are hidden from --help; given, they say so.
expect_tool "--per-channel restates the default" 0 "--per-channel is the default" -- quantize "$M" -o "$OUT/q.onnx" --mode dynamic --per-channel --quiet
expect_tool "optimize --verify restates the default" 0 "--verify is the default" -- optimize "$M" -o "$OUT/o.onnx" --verify --quiet
for c in "quantize --per-channel" "optimize --verify"; do
  "$ONNXTOOL" ${c% *} --help | grep -qE -- "${c#* }( |$)" && fail "${c} is in --help" || ok
done

[[ $(sha256sum "$M" "$IF") == "$before" ]] && ok || fail "an input model changed"
finish
