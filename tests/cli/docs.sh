#!/usr/bin/env bash
# The user documentation against the binary:
#  - every command `onnxtool help` lists has its page docs/commands/<command>.md, and every
#    option of its --help (long names, aliases included) is named on that page;
#  - every example runs: the `$ build/onnxtool ...` lines of the README's quick start (from the
#    repository root's view: testdata/ as in a clone), and every line starting `onnxtool ` in a
#    ```sh block of docs/commands/*.md, in the order written, each page in a folder of its own
#    holding model.onnx (testdata/tiny_cnn.onnx: image float[N,3,32,32] -> probs), if.onnx
#    (testdata/tiny_if.onnx) and samples/s0..s3/image.npy (tiny_cnn_samples). An example exits
#    0 unless its line ends with `# exit N`.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_file "$SOURCE_DIR/testdata/tiny_cnn.onnx" "$SOURCE_DIR/testdata/tiny_if.onnx" "$PYTHON"
make_work docs

# --- every command has a page naming each of its options
commands=$("$ONNXTOOL" --help | awk '/^Subcommands:/ { on = 1; next } on && NF { print $1 }')
[[ $(wc -w <<<"$commands") -ge 12 ]] && ok || fail "onnxtool --help lists too few commands: $commands"
for c in $commands; do
  page=$SOURCE_DIR/docs/commands/$c.md
  if [[ ! -f $page ]]; then
    fail "$c has no page docs/commands/$c.md"
    continue
  fi
  ok
  for flag in $("$ONNXTOOL" "$c" --help | grep -oE '^ +(-[a-zA-Z],)?--[a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+' | grep -v -- '--help'); do
    grep -qE -- "$flag([^a-z0-9-]|$)" "$page" && ok || fail "docs/commands/$c.md does not name $c's option $flag"
  done
done

# --- the fixture each page's examples run in
fixture() {
  mkdir -p "$1"
  cp "$SOURCE_DIR/testdata/tiny_cnn.onnx" "$1/model.onnx"
  cp "$SOURCE_DIR/testdata/tiny_if.onnx" "$1/if.onnx"
  tiny_cnn_samples "$1/samples" 4
}

# examples FILE: the example commands of a page, one per line (continuations joined).
examples() {
  awk '/^```sh$/ { inside = 1; next } /^```/ { inside = 0; next }
       inside {
         if (line != "") { line = line " " $0 } else if ($0 ~ /^onnxtool /) { line = $0 } else next
         if (line ~ /\\$/) { sub(/\\$/, "", line); next }
         print line; line = ""
       }' "$1"
}

# run_example DIR LINE PAGE: runs LINE in DIR with onnxtool the binary under test.
run_example() {
  local dir=$1 line=$2 page=$3 want=0 status=0
  [[ $line =~ \#[[:space:]]*exit[[:space:]]+([0-9]+) ]] && want=${BASH_REMATCH[1]}
  local cmd=${line%%#*}
  cmd="\"\$ONNXTOOL\" ${cmd#onnxtool }"
  (cd "$dir" && eval "$cmd") >"$WORK/example.out" 2>"$WORK/example.err" || status=$?
  if [[ $status -eq $want ]]; then
    ok
  else
    fail "$page: '$line' exited $status, not $want: $(tail -2 "$WORK/example.err" | tr '\n' ' ')"
  fi
}

pages=0
for page in "$SOURCE_DIR"/docs/commands/*.md; do
  name=$(basename "$page" .md)
  dir=$WORK/$name
  fixture "$dir"
  n=0
  while IFS= read -r line; do
    run_example "$dir" "$line" "docs/commands/$name.md"
    n=$((n + 1))
  done < <(examples "$page")
  [[ $n -ge 2 ]] && ok || fail "docs/commands/$name.md has $n examples (at least 2 in \`\`\`sh blocks)"
  pages=$((pages + 1))
done

# --- the README's quick start, from a clone's root (testdata/ beside the files it writes)
qs=$WORK/quick_start
mkdir -p "$qs"
ln -s "$SOURCE_DIR/testdata" "$qs/testdata"
n=0
while IFS= read -r line; do
  run_example "$qs" "onnxtool ${line#\$ build/onnxtool }" "README.md (quick start)"
  n=$((n + 1))
done < <(awk '/^## Quick start/ { on = 1; next } /^## / { on = 0 } on && /^\$ build\/onnxtool / { print }' "$SOURCE_DIR/README.md")
[[ $n -ge 6 ]] && ok || fail "README.md's quick start has $n commands"

finish
