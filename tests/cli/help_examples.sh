#!/usr/bin/env bash
# The examples under every command's --help (cli/examples.cpp) work: each command has at least
# two, and each one, run as printed in a folder holding model.onnx (testdata/tiny_cnn.onnx) and
# samples/ (two sample folders of image.npy), exits 0 (diff: 0 or 1, its verdict). The commands run in the order of
# cli/examples.cpp, where each finds the files the ones before it wrote.
#
# Needs testdata/tiny_cnn.onnx and Debian's python3 (to write the samples).
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
M=$SOURCE_DIR/testdata/tiny_cnn.onnx
needs_file "$M" "$PYTHON"
make_work help_examples

cd "$WORK" || exit 1
cp "$M" model.onnx
tiny_cnn_samples samples

# Every command of `onnxtool help` (help itself aside) has examples.
commands=$("$ONNXTOOL" help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}' | grep -vx help)
[[ -n $commands ]] || fail "no command listed by onnxtool help"
for command in $commands; do
  count=$("$ONNXTOOL" "$command" --help | grep -cE "^  onnxtool $command( |$)")
  if [[ $count -lt 2 ]]; then fail "$command --help: $count examples"; else ok; fi
done

for command in inspect run convert optimize quantize compare extract edit check diff devices; do
  [[ " "$(echo $commands)" " == *" $command "* ]] || { fail "$command: not a command"; continue; }
  while read -r line; do
    read -ra words <<<"$line"
    "$ONNXTOOL" "${words[@]:1}" >"$WORK/stdout" 2>"$WORK/stderr"
    rc=$?
    # diff exits 1 when the models differ, which is what its second example shows.
    [[ $command == diff && $rc -eq 1 ]] && rc=0
    if [[ $rc -ne 0 ]]; then fail "'$line': exit $rc: $(head -c 400 "$WORK/stderr")"; else ok; echo "ran: $line"; fi
  done < <("$ONNXTOOL" "$command" --help | grep -E "^  onnxtool $command( |$)")
done

finish
