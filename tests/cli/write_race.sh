#!/usr/bin/env bash
# Concurrent writers and readers of one model with external data (ir/model_io.cpp's directory
# lock): a model and its data file are a pair, never one file of each writer.
#
#  - PAIRS times, two `convert X -o out/o.onnx --external-data` at once, of models A and B that
#    differ in graph and weights: what is left must compute A's result or B's. A model of one
#    with the data of the other computes neither (A: y = x W, W all 1; B: y = -(x W), W all 2;
#    with x all ones, A gives 1024, B -2048, the mixes 2048 and -1024). The graphs differ in a
#    node, not in a weight: every initializer goes to the data file.
#  - READS runs of the model while another process keeps replacing it, by -o and by --in-place:
#    every run succeeds and computes A's or B's result.
#
# Environment: ONNXTOOL, PAIRS (default 300; 30 under the sanitizers, ten times slower: there the
# test checks the memory of the locking and renaming code, which a few rounds run, and the Release
# stage the races), READS (default 200; 30 under the sanitizers). The full run,
# PAIRS=1500 READS=500, takes about 5 minutes; README's Files section gives its figures.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
make_work write_race
if ((SANITIZED)); then
  PAIRS=${PAIRS:-30} READS=${READS:-30}
fi
PAIRS=${PAIRS:-300}
READS=${READS:-200}

"$PYTHON" - "$WORK" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
f = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 1024])
for name, w in (("A", 1.0), ("B", 2.0)):
    inits = [numpy_helper.from_array(np.full((1024, 1024), w, np.float32), "w")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y" if name == "A" else "m"])]
    if name == "B":
        nodes.append(helper.make_node("Neg", ["m"], ["y"]))
    g = helper.make_graph(nodes, "graph" + name, [f("x")], [f("y")], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}.onnx")
np.save(f"{d}/x.npy", np.ones((1, 1024), np.float32))
EOF

# result MODEL: "A", "B", or what else the model gave (a mix, an error).
result() {
  local out
  out=$("$ONNXTOOL" run "$1" --input "x=$WORK/x.npy" 2>&1)
  case $out in
    *"min 1024  max 1024 "*) echo A ;;
    *"min -2048  max -2048 "*) echo B ;;
    *) echo "${out//$'\n'/ }" ;;
  esac
}
[[ $(result "$WORK/A.onnx") == A && $(result "$WORK/B.onnx") == B ]] && ok || fail "the models do not compute 1024 and -2048"

# --- concurrent writers
# Between the rename that puts one file of a pair in place and the next, a writer is exposed; on
# a local filesystem that moment lasts microseconds and a race shows once in thousands of runs
# (on a disk with slow directory syncs, one in four). A shim (LD_PRELOAD, tests/cli/rename_hook.c,
# where a C compiler is present) sleeps 0-8 ms after every rename, a different time each, so
# that without the lock one writer's two renames often fall between the other's.
slow=()
if command -v cc >/dev/null 2>&1; then
  cc -shared -fPIC -o "$WORK/slow_rename.so" "$SOURCE_DIR/tests/cli/rename_hook.c" -ldl || fail "the rename shim does not build"
  slow=(env RENAME_HOOK_PAUSE=1 LD_PRELOAD="$WORK/slow_rename.so" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0")
else
  missing_data "a C compiler (cc) for the slow-rename shim (the races run, but seldom show)"
fi
mkdir -p "$WORK/out"
mixed=0 errors=0
for ((i = 0; i < PAIRS; i++)); do
  "${slow[@]}" "$ONNXTOOL" convert "$WORK/A.onnx" -o "$WORK/out/o.onnx" --external-data --size-threshold 0 >/dev/null 2>"$WORK/a.err" &
  a=$!
  "${slow[@]}" "$ONNXTOOL" convert "$WORK/B.onnx" -o "$WORK/out/o.onnx" --external-data --size-threshold 0 >/dev/null 2>"$WORK/b.err" &
  b=$!
  wait $a || { errors=$((errors + 1)); [[ $errors -le 3 ]] && echo "writer A failed: $(cat "$WORK/a.err")"; }
  wait $b || { errors=$((errors + 1)); [[ $errors -le 3 ]] && echo "writer B failed: $(cat "$WORK/b.err")"; }
  r=$(result "$WORK/out/o.onnx")
  if [[ $r != A && $r != B ]]; then
    mixed=$((mixed + 1))
    [[ $mixed -le 3 ]] && echo "pair $i: $r"
  fi
done
echo "concurrent writers: $PAIRS pairs, $mixed mixed, $errors writer failures"
[[ $mixed -eq 0 && $errors -eq 0 ]] && ok || fail "$mixed of $PAIRS pairs mixed, $errors writers failed"
# Nothing left behind: the pair and no temporaries.
left=$(find "$WORK/out" -mindepth 1 | sort | tr '\n' ' ')
[[ $left == "$WORK/out/o.onnx $WORK/out/o.onnx.data " ]] && ok || fail "left in out/: $left"

# --- readers while the model is replaced
mkdir -p "$WORK/live"
"$ONNXTOOL" convert "$WORK/A.onnx" -o "$WORK/live/m.onnx" --external-data --size-threshold 0 >/dev/null
(
  for ((i = 0; ; i++)); do
    [[ -e $WORK/stop ]] && exit 0
    case $((i % 3)) in
      0) "${slow[@]}" "$ONNXTOOL" convert "$WORK/B.onnx" -o "$WORK/live/m.onnx" --external-data --size-threshold 0 ;;
      1) "${slow[@]}" "$ONNXTOOL" convert "$WORK/live/m.onnx" --in-place --external-data --size-threshold 0 ;;
      2) "${slow[@]}" "$ONNXTOOL" convert "$WORK/A.onnx" -o "$WORK/live/m.onnx" --external-data --size-threshold 0 ;;
    esac >/dev/null 2>>"$WORK/writer.err"
  done
) &
writer=$!
at_exit "touch '$WORK/stop'; kill $writer 2>/dev/null"
bad=0
seen_a=0 seen_b=0
for ((i = 0; i < READS; i++)); do
  r=$(result "$WORK/live/m.onnx")
  case $r in
    A) seen_a=$((seen_a + 1)) ;;
    B) seen_b=$((seen_b + 1)) ;;
    *) bad=$((bad + 1)); [[ $bad -le 3 ]] && echo "read $i: $r" ;;
  esac
done
touch "$WORK/stop"
wait $writer
echo "readers: $READS runs during replacement ($seen_a saw A, $seen_b saw B), $bad failed"
[[ $bad -eq 0 ]] && ok || fail "$bad of $READS reads failed or computed a mix"
[[ ! -s $WORK/writer.err ]] && ok || fail "the replacing writer failed: $(head -n 3 "$WORK/writer.err")"
finish
