#!/usr/bin/env bash
# Progress on stderr (README, "Progress"): a long job writes a few "onnxtool CMD: progress: ..."
# lines to a log (not one per step), --quiet removes them, and stdout is the same bytes either
# way (--json: still one JSON document). On a terminal the line is redrawn in place. And
# compare --per-layer, which keeps A's tensors up to a memory budget and spills the rest to a
# temporary file, gives the same report whatever the budget, zero error for a model against
# itself on every tensor, and the plain comparison's output lines.
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_SOURCE_DIR; the PaddleOCR cls model under
# ONNXTOOL_CACHE_DIR/models when fetched (that part is skipped otherwise).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_work progress
M=$SOURCE_DIR/testdata/tiny_cnn.onnx
"$ONNXTOOL" optimize "$M" -o "$WORK/opt.onnx" --quiet >/dev/null || fail "optimize of tiny_cnn failed"
PROGRESS='^onnxtool [a-z]*: progress: '

# A job long enough for progress (a phase shows nothing before a second): the samples double
# until the log has a progress line and the job took 3 s, so that the runs below with the same
# samples still pass the second when the machine's load drops; this also bounds the test's time
# on a fast machine.
samples=200
while :; do
  start=$(date +%s%N)
  "$ONNXTOOL" compare "$M" "$WORK/opt.onnx" --per-layer --samples $samples >"$WORK/loud.out" 2>"$WORK/loud.err"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  grep -q "$PROGRESS" "$WORK/loud.err" && ((ms >= 3000)) && break
  ((samples >= 51200)) && break
  samples=$((samples * 2))
done
[[ $rc -eq 0 ]] && ok || fail "compare --samples $samples: exit $rc: $(head -3 "$WORK/loud.err")"
lines=$(grep -c "$PROGRESS" "$WORK/loud.err")
# Rules (cli/progress.cpp): the first line after a second, then at most one every 2 s, and one
# "done" line at the end of the phase.
limit=$((ms / 2000 + 3))
if ((lines >= 2 && lines <= limit)); then ok; else fail "$lines progress lines in $ms ms (expected 2..$limit): $(head -5 "$WORK/loud.err")"; fi
grep -q "progress: per-layer comparison done in " "$WORK/loud.err" && ok || fail "no 'done in' line: $(tail -2 "$WORK/loud.err")"
# The time left, at the pace so far, once a tenth of a known total is done (or after 5 s):
# ", ~N s left" (or "~N min left") after the elapsed time.
far=$(grep "$PROGRESS" "$WORK/loud.err" | grep -E ' [0-9]+/[0-9]+ \(([1-9][0-9])%\)' || true)
if [[ -n $far ]]; then
  ! grep -vqE ', [0-9]+ s, ~[0-9]+ (s|min) left$' <<<"$far" && ok || fail "a line past 10% without the time left: $far"
fi
early=$(grep "$PROGRESS" "$WORK/loud.err" | grep -E ' [0-9]+/[0-9]+ \([0-9]%\), [0-4] s' || true)
[[ -z $early ]] || ! grep -q "left" <<<"$early" && ok || fail "the time left before a tenth and 5 s: $early"
others=$(grep -vc "$PROGRESS" "$WORK/loud.err")
[[ $others -eq 0 ]] && ok || fail "stderr has $others other lines: $(grep -v "$PROGRESS" "$WORK/loud.err" | head -3)"
grep -q $'\r' "$WORK/loud.err" && fail "carriage returns in a log" || ok

"$ONNXTOOL" compare "$M" "$WORK/opt.onnx" --per-layer --samples $samples --quiet >"$WORK/quiet.out" 2>"$WORK/quiet.err"
[[ ! -s $WORK/quiet.err ]] && ok || fail "--quiet leaves stderr: $(head -3 "$WORK/quiet.err")"
cmp -s "$WORK/loud.out" "$WORK/quiet.out" && ok || fail "stdout differs with and without progress"

# With --json too; a run that the machine's load made shorter than a second shows none, so the
# samples double again (up to 4 times) until one lasts long enough.
for ((more = 0; more <= 4; more++)); do
  "$ONNXTOOL" compare "$M" "$WORK/opt.onnx" --per-layer --samples $((samples << more)) --json >"$WORK/j.json" 2>"$WORK/j.err"
  grep -q "$PROGRESS" "$WORK/j.err" && break
done
"$PYTHON" -c 'import json,sys; assert isinstance(json.load(open(sys.argv[1])), dict)' "$WORK/j.json" &&
  ok || fail "--json stdout is not one JSON document: $(head -c 200 "$WORK/j.json")"
grep -q "$PROGRESS" "$WORK/j.err" && ok || fail "--json: no progress on stderr (--samples up to $((samples << 4)))"

# Other commands take --quiet (the ones that can take long). Warnings stay: what a result does
# not prove (a model written unchanged, float16 verified on random inputs only).
for cmd in "run $M --random" "check $M" "convert $M -o $WORK/c.onnx --opset 13" "optimize $M -o $WORK/o.onnx" \
  "quantize $M -o $WORK/q.onnx --mode dynamic"; do
  # shellcheck disable=SC2086
  "$ONNXTOOL" $cmd --quiet >/dev/null 2>"$WORK/err" && ! grep -qv '^onnxtool [a-z]*: warning: ' "$WORK/err" && ok ||
    fail "$cmd --quiet: $(head -2 "$WORK/err")"
done
# A note is informational: --quiet silences it.
"$ONNXTOOL" convert "$WORK/c.onnx" -o "$WORK/c2.onnx" --opset 13 2>"$WORK/err" >/dev/null
grep -q "note: " "$WORK/err" && ok || fail "convert to the same opset: no note"
"$ONNXTOOL" convert "$WORK/c.onnx" -o "$WORK/c2.onnx" --opset 13 --quiet 2>"$WORK/err" >/dev/null
[[ ! -s $WORK/err ]] && ok || fail "--quiet leaves the note: $(cat "$WORK/err")"

# On a terminal: one line redrawn in place (carriage returns), no "done" lines. (Judged when the
# job ran long enough for a line, as the machine's speed decides.)
if script -qc true /dev/null >/dev/null 2>&1; then
  start=$(date +%s%N)
  script -qc "'$ONNXTOOL' compare '$M' '$WORK/opt.onnx' --per-layer --samples $((samples * 2)) >/dev/null" "$WORK/tty.log" >/dev/null 2>&1
  if (((($(date +%s%N) - start) / 1000000) >= 2000)); then
    grep -q $'\r''onnxtool compare: progress: per-layer comparison' "$WORK/tty.log" && ok ||
      fail "no redrawn line on a terminal: $(head -c 200 "$WORK/tty.log")"
  fi
  grep -q "done in" "$WORK/tty.log" && fail "a terminal got a 'done' line" || ok
fi

# --per-layer: the same report whether A's tensors stay in memory or all go to the file; a model
# against itself has no error anywhere, on every tensor its nodes produce.
"$ONNXTOOL" compare "$M" "$WORK/opt.onnx" --per-layer --samples 3 --quiet >"$WORK/mem.out"
ONNXTOOL_PER_LAYER_MEMORY=0 "$ONNXTOOL" compare "$M" "$WORK/opt.onnx" --per-layer --samples 3 --quiet >"$WORK/spill.out"
cmp -s "$WORK/mem.out" "$WORK/spill.out" && ok || fail "spilled per-layer report differs: $(diff "$WORK/mem.out" "$WORK/spill.out" | head -4)"
ONNXTOOL_PER_LAYER_MEMORY=0 "$ONNXTOOL" compare "$M" "$M" --per-layer --quiet >"$WORK/self.out"
# tiny_cnn: six nodes of one output each, all listed among the worst (at most 10), all exact.
grep -q '^6 intermediate tensors matched' "$WORK/self.out" && ok || fail "A against itself: $(sed -n 2p "$WORK/self.out")"
[[ $(grep -c '^  .* (node .*): max abs 0, ' "$WORK/self.out") -eq 6 ]] && ! grep -q 'first beyond' "$WORK/self.out" && ok ||
  fail "A against itself has errors: $(cat "$WORK/self.out")"

# check of large models: its phases (reading, checking nodes, shape inference) named with their
# model when several are checked, each ended by a "done" line in a log, and the listing on
# stdout the same with --quiet. Nodes double from 200,000 until a phase lasts the second that
# shows it (up to 3.2 million).
MAKE_LARGE=$(dirname "$ONNXTOOL")/make_large_graph
if [[ -x $MAKE_LARGE ]]; then
  nodes=200000
  while :; do
    "$MAKE_LARGE" "$WORK/large.onnx" --nodes $nodes >/dev/null || { fail "make_large_graph --nodes $nodes failed"; break; }
    cp "$WORK/large.onnx" "$WORK/large_b.onnx"
    "$ONNXTOOL" check "$WORK/large.onnx" "$WORK/large_b.onnx" >"$WORK/check.out" 2>"$WORK/check.err"
    rc=$?
    grep -q "$PROGRESS" "$WORK/check.err" && break
    ((nodes >= 3200000)) && break
    nodes=$((nodes * 2))
  done
  [[ $rc -eq 0 ]] && ok || fail "check of two $nodes-node models: exit $rc: $(head -3 "$WORK/check.err")"
  if grep -q "$PROGRESS" "$WORK/check.err"; then
    grep -vq "^onnxtool check: progress: $WORK/large\(_b\)\?\.onnx: \(reading\|checking nodes\|shape inference\)" "$WORK/check.err" &&
      fail "check progress lines not naming a model and a phase: $(grep -v "large.*onnx: " "$WORK/check.err" | head -3)" || ok
    while IFS= read -r phase; do
      grep -qF "progress: $phase done in " "$WORK/check.err" && ok || fail "check: no 'done' line for '$phase'"
    done < <(sed -E 's/^onnxtool check: progress: //; s/ done in .*//; s/ [0-9]+\/[0-9]+ \(.*//; s/, [0-9]+ s$//' "$WORK/check.err" | sort -u)
  else
    missing_data "a check phase lasting a second (up to $nodes nodes)"
  fi
  "$ONNXTOOL" check "$WORK/large.onnx" "$WORK/large_b.onnx" --quiet >"$WORK/check_quiet.out" 2>"$WORK/check_quiet.err"
  [[ ! -s $WORK/check_quiet.err ]] && cmp -s "$WORK/check.out" "$WORK/check_quiet.out" && ok ||
    fail "check --quiet: stderr '$(head -2 "$WORK/check_quiet.err")' or stdout differs"
  rm -f "$WORK/large.onnx" "$WORK/large_b.onnx"
else
  missing_data "$MAKE_LARGE"
fi

CLS=$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx
if [[ -f $CLS ]]; then
  SHAPE=(--input-shape x=1,3,48,192)
  "$ONNXTOOL" optimize "$CLS" -o "$WORK/cls_opt.onnx" --quiet >/dev/null || fail "optimize of the cls model failed"
  "$ONNXTOOL" compare "$CLS" "$WORK/cls_opt.onnx" "${SHAPE[@]}" --per-layer --quiet >"$WORK/cls_mem.out"
  ONNXTOOL_PER_LAYER_MEMORY=0 "$ONNXTOOL" compare "$CLS" "$WORK/cls_opt.onnx" "${SHAPE[@]}" --per-layer --quiet >"$WORK/cls_spill.out"
  cmp -s "$WORK/cls_mem.out" "$WORK/cls_spill.out" && ok || fail "cls: spilled per-layer report differs"
  # The outputs' lines are the plain comparison's.
  "$ONNXTOOL" compare "$CLS" "$WORK/cls_opt.onnx" "${SHAPE[@]}" --quiet >"$WORK/cls_plain.out"
  cmp -s <(grep '^output ' "$WORK/cls_plain.out") <(grep '^output ' "$WORK/cls_mem.out") && ok ||
    fail "cls: per-layer output lines differ from the plain comparison's"
  grep -q '^[1-9][0-9]* intermediate tensors matched' "$WORK/cls_mem.out" && ok || fail "cls: nothing matched: $(head -3 "$WORK/cls_mem.out")"
else
  missing_data "$CLS"
fi

finish
