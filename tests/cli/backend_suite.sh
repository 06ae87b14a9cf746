#!/usr/bin/env bash
# The ONNX backend suite through the command line (issue 20): every case that has test data
# (node, pytorch-converted, pytorch-operator, simple) runs as a user would run it,
#   onnxtool run MODEL --inputs test_data_set_N --expect test_data_set_N
# for each of its data sets (tensors, sequences, optionals, strings and bfloat16 read from the
# .pb files, outputs compared at the default rtol 1e-3, atol 1e-5). Every case must pass unless
# tests/conformance/cli_skips.txt lists it with its reason, and every case listed there must
# still fail, so that the list stays true. A case whose model contradicts its own data, and which
# ONNX has corrected since, is listed in tests/conformance/cli_corrections.txt: its model as
# shipped must fail, and the model corrected by `onnxtool edit` must pass. Prints the counts.
# Under the sanitizers one case in three runs.
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_BACKEND_DATA (the suite; skipped, exit 77, when
# missing), BACKEND_SUITE_JOBS (parallel runs, default 2), BACKEND_SUITE_FILTER (a substring of
# the case names to run, for debugging; the skips list is then checked for those cases only).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_file "$BACKEND/node"
make_work backend_suite
SKIPS=$SOURCE_DIR/tests/conformance/cli_skips.txt
CORRECTIONS=$SOURCE_DIR/tests/conformance/cli_corrections.txt
for f in "$SKIPS" "$CORRECTIONS"; do [[ -f $f ]] || { echo "FAIL: $f is missing"; exit 1; }; done

# run_model MODEL DIR: runs MODEL on each data set of DIR; prints the first failure, "SET: the
# error line", and returns 1, or returns 0.
run_model() {
  local set err
  for set in "$2"/test_data_set_*; do
    # One thread per run: the runs themselves go in parallel.
    if ! err=$("$ONNXTOOL" run "$1" --inputs "$set" --expect "$set" --threads 1 2>&1 >/dev/null); then
      echo "${set##*/}: ${err//$'\n'/ }"
      return 1
    fi
  done
}

# run_case DIR: "pass NAME", "corrected NAME" or "fail NAME: the reason".
run_case() {
  local dir=$1 name shape why model
  name=${dir#"$BACKEND"/}
  shape=$(awk -v n="$name" '$1 == n { print $2; exit }' "$CORRECTIONS")
  if [[ -z $shape ]]; then
    why=$(run_model "$dir/model.onnx" "$dir") && echo "pass $name" || echo "fail $name: $why"
    return
  fi
  if run_model "$dir/model.onnx" "$dir" >/dev/null; then
    echo "fail $name: the model as shipped passes: remove it from $CORRECTIONS"
    return
  fi
  model=$WORK/corrected/${name//\//_}.onnx
  if ! why=$("$ONNXTOOL" edit "$dir/model.onnx" -o "$model" --set-input-shape "$shape" 2>&1 >/dev/null); then
    echo "fail $name: edit --set-input-shape $shape: $why"
    return
  fi
  why=$(run_model "$model" "$dir") && echo "corrected $name" || echo "fail $name: corrected by --input-shape $shape: $why"
}
export -f run_model run_case
export ONNXTOOL BACKEND CORRECTIONS WORK
mkdir -p "$WORK/corrected"

# Under the sanitizers every third case (in name order) runs here: the in-process conformance
# suite (tests/conformance_test.cpp) runs every case's kernels there, and what this test adds,
# the CLI's reading of the .pb files and --expect, is the same code for every case.
stride=1
((SANITIZED)) && stride=3
start=$SECONDS
find "$BACKEND" -mindepth 3 -maxdepth 3 -type d -name test_data_set_0 -printf '%h\n' |
  grep -F -- "${BACKEND_SUITE_FILTER:-}" | LC_ALL=C sort | awk -v s="$stride" '(NR - 1) % s == 0' |
  xargs -r -P "${BACKEND_SUITE_JOBS:-2}" -I{} bash -c 'run_case "$1"' _ {} >"$WORK/results"

# The skips: "suite/case reason" lines; # starts a comment.
declare -A skip
while read -r name reason; do
  [[ -z $name || $name == \#* ]] && continue
  [[ -n $reason ]] || fail "$SKIPS: $name has no reason"
  skip[$name]=1
done <"$SKIPS"

total=0 pass=0 corrected=0 skipped=0
declare -A seen
while read -r verdict name rest; do
  name=${name%:}
  seen[$name]=1
  total=$((total + 1))
  if [[ $verdict == corrected ]]; then
    pass=$((pass + 1)) corrected=$((corrected + 1))
    ok
  elif [[ $verdict == pass ]]; then
    pass=$((pass + 1))
    if [[ -n ${skip[$name]+x} ]]; then
      fail "$name passes but $SKIPS lists it: remove it from the list"
    else
      ok
    fi
  elif [[ -n ${skip[$name]+x} ]]; then
    skipped=$((skipped + 1))
    ok
  else
    fail "$name: $rest"
  fi
done <"$WORK/results"
if [[ -z ${BACKEND_SUITE_FILTER:-} && $stride -eq 1 ]]; then
  for name in "${!skip[@]}"; do
    [[ -n ${seen[$name]+x} ]] || fail "$SKIPS lists $name, which the suite does not have"
  done
  while read -r name _; do
    [[ -z $name || $name == \#* ]] && continue
    [[ -n ${seen[$name]+x} ]] || fail "$CORRECTIONS lists $name, which the suite does not have"
  done <"$CORRECTIONS"
fi
((stride > 1)) && echo "the sanitizer build: one case in $stride ran (the conformance suite runs them all in-process)"
echo "backend suite through the CLI: $pass of $total cases pass ($corrected of them with the model corrected as" \
  "$CORRECTIONS says), $skipped fail as $SKIPS says ($((SECONDS - start)) s)"
finish
