#!/usr/bin/env bash
# Hostile environments for every file onnxtool writes or reads: outputs that are device nodes,
# FIFOs, symlinks, the input's own files or a full disk; temporary names planted as symlinks; a
# process killed while writing; tensor files that are FIFOs or /dev/zero; numeric flags of nan,
# inf or out of their domain; a full stdout. Each case: the exit code, one stderr line when it
# fails, and the input's bytes (hashed before and after) untouched.
#
# Environment: ONNXTOOL (the binary).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
make_work hardening
MOUNTED=""
at_exit '[[ -n $MOUNTED ]] && umount "$MOUNTED" 2>/dev/null'
EXPECT_TIMEOUT=60

# Models: a small one; one whose weights are external data (ext/m.onnx + ext/m.onnx.data); a
# model with two outputs named "a/b" and "a_b".
"$PYTHON" - "$WORK" <<'EOF'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
w = numpy_helper.from_array(np.arange(4096, dtype=np.float32).reshape(64, 64) / 4096, "w")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
                      "small", [f("x", [1, 64])], [f("y", [1, 64])], [w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.save(m, f"{d}/small.onnx")
os.makedirs(f"{d}/ext")
onnx.save(m, f"{d}/ext/m.onnx", save_as_external_data=True, location="m.onnx.data", size_threshold=0)
g = helper.make_graph([helper.make_node("Relu", ["x"], ["a/b"]), helper.make_node("Neg", ["x"], ["a_b"])],
                      "names", [f("x", [2])], [f("a/b", [2]), f("a_b", [2])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/names.onnx")
# Models `check` rejects, which run must refuse too (with the rule's message).
x = f("x", [2])
relu = lambda: [helper.make_node("Relu", ["x"], ["y"])]
ones = lambda name: numpy_helper.from_array(np.ones(2, np.float32), name)
two_fields = ones("c")
two_fields.float_data.extend([1, 1])
bad = {"dup_output": helper.make_graph(relu(), "g", [x], [f("y", [2]), f("y", [2])]),
       "dup_input": helper.make_graph(relu(), "g", [x, x], [f("y", [2])]),
       "dup_initializer": helper.make_graph(relu(), "g", [x], [f("y", [2])], [ones("k"), ones("k")]),
       "initializer_produced": helper.make_graph(relu(), "g", [x], [f("y", [2])], [ones("y")]),
       "raw_and_typed": helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"])], "g", [x], [f("y", [2])], [two_fields])}
for name, graph in bad.items():
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}.onnx")
np.save(f"{d}/x.npy", np.array([1.5, -2.0], np.float32))
np.save(f"{d}/x64.npy", np.ones((1, 64), np.float32))
EOF

# --------------------------------------------------------------- models check rejects
for bad in dup_output:graph.duplicate-output dup_input:graph.duplicate-input \
  dup_initializer:graph.duplicate-initializer initializer_produced:graph.ssa raw_and_typed:tensor.data-fields; do
  model=${bad%%:*} rule=${bad#*:}
  expect_tool "run refuses $model" 2 "$rule" -- run "$WORK/$model.onnx" --input "x=$WORK/x.npy"
  expect_tool "compare refuses $model" 2 "$rule" -- compare "$WORK/$model.onnx" "$WORK/$model.onnx" --random
  "$ONNXTOOL" check "$WORK/$model.onnx" >"$WORK/stdout" 2>&1
  rc=$?
  [[ $rc -eq 1 ]] && grep -q "error $rule" "$WORK/stdout" && ok || fail "check $model: exit $rc: $(head -c 300 "$WORK/stdout")"
done

# --------------------------------------------------------------- numeric flags
M=$WORK/small.onnx
expect_tool "optimize --rtol nan" 2 "--rtol: 'nan' is not a finite number" -- optimize "$M" -o "$WORK/o.onnx" --rtol nan
expect_tool "optimize --atol inf" 2 "--atol: 'inf' is not a finite number" -- optimize "$M" -o "$WORK/o.onnx" --atol inf
expect_tool "optimize --rtol -1" 2 "--rtol: '-1' is outside" -- optimize "$M" -o "$WORK/o.onnx" --rtol -1
expect_tool "compare --rtol nan" 2 "--rtol: 'nan' is not a finite number" -- compare "$M" "$M" --random --rtol nan
expect_tool "convert --size-threshold -1" 2 "--size-threshold: '-1' is outside" -- convert "$M" -o "$WORK/o.onnx" --external-data --size-threshold -1
expect_tool "quantize --moving-average -5" 2 "--moving-average: '-5' is outside" -- quantize "$M" -o "$WORK/o.onnx" --mode dynamic --moving-average -5
expect_tool "quantize --calib-samples -1" 2 "--calib-samples: '-1' is outside" -- quantize "$M" -o "$WORK/o.onnx" --mode dynamic --calib-samples -1
expect_tool "quantize --percentile 0" 2 "--percentile: '0' is outside" -- quantize "$M" -o "$WORK/o.onnx" --mode dynamic --percentile 0
expect_tool "quantize --accuracy-target nan" 2 "--accuracy-target: 'nan'" -- quantize "$M" -o "$WORK/o.onnx" --mode dynamic --accuracy-target nan
expect_tool "run --seed -1" 2 "--seed: '-1' is outside" -- run "$M" --random --seed -1
expect_tool "run --threads 5000" 2 "--threads: '5000' is outside" -- run "$M" --random --threads 5000
[[ ! -e $WORK/o.onnx ]] && ok || fail "a refused flag left $WORK/o.onnx"

# --------------------------------------------------------------- stdout that cannot be written
"$ONNXTOOL" inspect "$M" --json >/dev/full 2>"$WORK/stderr"
rc=$?
[[ $rc -eq 1 ]] && grep -q "cannot write to standard output" "$WORK/stderr" && ok ||
  fail "inspect --json > /dev/full: exit $rc: $(cat "$WORK/stderr")"

# --------------------------------------------------------------- outputs that are not regular files
mknod "$WORK/null" c 1 3
expect_tool "-o a character device" 0 "wrote" -- convert "$M" -o "$WORK/null"
[[ -c $WORK/null ]] && ok || fail "-o a character device: the device node was replaced: $(ls -l "$WORK/null")"
expect_tool "optimize -o a character device" 0 "wrote" -- optimize "$M" -o "$WORK/null"
[[ -c $WORK/null ]] && ok || fail "optimize -o a character device: replaced"
expect_tool "an external-data model to a character device" 2 "no external data file can go beside it" -- \
  convert "$WORK/ext/m.onnx" -o "$WORK/null"
mkfifo "$WORK/fifo"
cat "$WORK/fifo" >"$WORK/from_fifo" &
reader=$!
expect_tool "-o a FIFO" 0 "wrote" -- convert "$M" -o "$WORK/fifo"
wait "$reader"
"$ONNXTOOL" convert "$M" -o "$WORK/regular.onnx" >/dev/null
cmp -s "$WORK/from_fifo" "$WORK/regular.onnx" && [[ -p $WORK/fifo ]] && ok || fail "-o a FIFO: other bytes, or the FIFO was replaced"
mkdir "$WORK/dir_out"
expect_tool "-o a directory with --external-data" 2 "is a directory" -- convert "$WORK/ext/m.onnx" -o "$WORK/dir_out" --external-data
[[ ! -e $WORK/dir_out.data && -z $(ls -A "$WORK/dir_out") ]] && ok || fail "-o DIR --external-data left files: $(ls -a "$WORK" "$WORK/dir_out")"

# --------------------------------------------------------------- outputs that are the input's files
ext_before=$(tree_hash "$WORK/ext")
expect_tool "optimize -o the input's data file" 2 "is the input's external data file" -- \
  optimize "$WORK/ext/m.onnx" -o "$WORK/ext/m.onnx.data"
cp "$WORK/ext/m.onnx" "$WORK/ext_m_copy.onnx"
ln -s m.onnx.data "$WORK/ext/alias.data"
expect_tool "optimize whose OUT.data is the input's data file (through a link)" 2 "would replace the input's external data file" -- \
  optimize "$WORK/ext/m.onnx" -o "$WORK/ext/alias"
mkdir -p "$WORK/ext2"
ln -s ../ext/m.onnx.data "$WORK/ext2/m.onnx.data"
expect_tool "quantize whose OUT.data is the input's data file (through a link)" 2 "would replace the input's external data file" -- \
  quantize "$WORK/ext/m.onnx" -o "$WORK/ext2/m.onnx" --mode dynamic
ln -s m.onnx "$WORK/ext/model_link.onnx"
expect_tool "quantize -o the input through a symlink" 2 "is the input model itself" -- \
  quantize "$WORK/ext/m.onnx" -o "$WORK/ext/model_link.onnx" --mode dynamic
expect_tool "quantize --report the input's data file" 2 "--report" -- \
  quantize "$WORK/ext/m.onnx" -o "$WORK/q.onnx" --mode dynamic --report "$WORK/ext/m.onnx.data"
rm "$WORK/ext/alias.data" "$WORK/ext/model_link.onnx" "$WORK/ext2/m.onnx.data"
mkdir -p "$WORK/runin"
cp "$M" "$WORK/runin/y.npy"  # a model whose output y would be written over it
expect_tool "run --output-dir over the input" 2 "is the input model" -- \
  run "$WORK/runin/y.npy" --input "x=$WORK/x64.npy" --output-dir "$WORK/runin"
cmp -s "$M" "$WORK/runin/y.npy" && ok || fail "run --output-dir replaced the input model"
[[ $(tree_hash "$WORK/ext") == "$ext_before" ]] && ok || fail "the input's files changed"
rm -f "$WORK/ext_m_copy.onnx"

# --------------------------------------------------------------- convert's data file and --in-place
mkdir -p "$WORK/cv"
expect_tool "--data-file equal to the output's own name" 2 "would be the model file itself" -- \
  convert "$M" -o "$WORK/cv/x.onnx" --external-data --size-threshold 0 --data-file x.onnx
[[ -z $(ls -A "$WORK/cv") ]] && ok || fail "--data-file = output left files: $(ls -A "$WORK/cv")"
mkdir -p "$WORK/outside"
ln -s "$WORK/outside" "$WORK/cv/linkdir"
expect_tool "--data-file through a symlinked directory leading outside" 2 "outside the model's directory" -- \
  convert "$M" -o "$WORK/cv/x.onnx" --external-data --size-threshold 0 --data-file linkdir/x.data
[[ -z $(ls -A "$WORK/outside") ]] && ok || fail "--data-file linkdir/x wrote outside: $(ls -A "$WORK/outside")"
cp "$M" "$WORK/cv/real.onnx"
ln -s real.onnx "$WORK/cv/link.onnx"
expect_tool "--in-place through a symlink" 0 "wrote" -- convert "$WORK/cv/link.onnx" -o "$WORK/cv/link.onnx" --in-place --opset 17
if [[ -L $WORK/cv/link.onnx ]] && "$PYTHON" -c '
import onnx, sys
m = onnx.load(sys.argv[1])
assert [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] == [17], m.opset_import
' "$WORK/cv/real.onnx"; then ok; else fail "--in-place through a symlink: the link was replaced or the file not converted"; fi
expect_tool "--in-place with --data-file equal to the model" 2 "external data file would" -- \
  convert "$WORK/cv/real.onnx" -o "$WORK/cv/real.onnx" --in-place --external-data --size-threshold 0 --data-file real.onnx

# --------------------------------------------------------------- planted temporary names
echo "precious" >"$WORK/victim"
ln -s "$WORK/victim" "$WORK/report.json.tmp"
expect_tool "--report with a planted .tmp symlink" 0 "quantized" -- \
  quantize "$M" -o "$WORK/q.onnx" --mode dynamic --report "$WORK/report.json"
[[ $(cat "$WORK/victim") == precious ]] && "$PYTHON" -c 'import json,sys; json.load(open(sys.argv[1]))' "$WORK/report.json" && ok ||
  fail "--report followed a planted .tmp symlink"
mkdir -p "$WORK/outs"
ln -s "$WORK/victim" "$WORK/outs/y.npy.tmp"
expect_tool "run --output-dir with a planted .tmp symlink" 0 "y:" -- run "$M" --input "x=$WORK/x64.npy" --output-dir "$WORK/outs"
[[ $(cat "$WORK/victim") == precious && -f $WORK/outs/y.npy ]] && ok || fail "run --output-dir followed a planted .tmp symlink"
for f in "$WORK"/.*.tmp* "$WORK"/outs/.*.tmp*; do
  [[ -e $f ]] && fail "a temporary file was left: $f"
done

# --------------------------------------------------------------- output names that sanitize alike
expect_tool "outputs a/b and a_b" 0 "" -- run "$WORK/names.onnx" --input "x=$WORK/x.npy" --output-dir "$WORK/names" --json
if "$PYTHON" -c '
import json, sys, numpy as np
d = json.load(open(sys.argv[1]))
files = {o["name"]: o["file"] for o in d["outputs"]}
assert files["a/b"] != files["a_b"], files
assert np.array_equal(np.load(files["a/b"]), [1.5, 0]) and np.array_equal(np.load(files["a_b"]), [-1.5, 2]), files
' "$WORK/stdout"; then ok; else fail "outputs a/b and a_b: $(cat "$WORK/stdout")"; fi
expect_tool "run --expect reads them back" 0 "matches" -- run "$WORK/names.onnx" --input "x=$WORK/x.npy" --expect "$WORK/names"
expect_tool "compare --expect reads them back" 0 "within tolerance" -- compare "$WORK/names.onnx" --input "x=$WORK/x.npy" --expect "$WORK/names"

# --------------------------------------------------------------- tensor files that are not files
mkfifo "$WORK/x_fifo.npy"
expect_tool "a FIFO as --input" 2 "not a regular file" -- run "$M" --input "x=$WORK/x_fifo.npy"
ln -s /dev/zero "$WORK/zero.pb"
expect_tool "/dev/zero as a .pb --input" 2 "not a regular file" -- run "$M" --input "x=$WORK/zero.pb"
mkdir -p "$WORK/calib/s0"
mkfifo "$WORK/calib/s0/x.npy"
expect_tool "a FIFO as calibration data" 2 "not a regular file" -- quantize "$M" -o "$WORK/q2.onnx" --mode static --inputs "$WORK/calib"

# A 96 MB model, for the full disk and the killed process.
"$PYTHON" - "$WORK" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
w = numpy_helper.from_array(np.ones((4096, 6144), np.float32), "w")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "big",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4096])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6144])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/big.onnx")
EOF

# --------------------------------------------------------------- a full disk
mkdir -p "$WORK/full"
if mount -t tmpfs -o size=64k tmpfs "$WORK/full" 2>/dev/null; then
  MOUNTED=$WORK/full
  expect_tool "a model on a full disk" 2 "No space left on device" -- convert "$WORK/big.onnx" -o "$WORK/full/m.onnx"
  cat /dev/zero >"$WORK/full/filler" 2>/dev/null
  expect_tool "--report on a full disk" 2 "No space left on device" -- \
    quantize "$M" -o "$WORK/q3.onnx" --mode dynamic --report "$WORK/full/report.json"
  [[ -z $(ls -A "$WORK/full" | grep -v '^filler$') ]] && ok || fail "a full disk kept partial files: $(ls -A "$WORK/full")"
  umount "$WORK/full" && MOUNTED=""
else
  # No mount here (an unprivileged container): /dev/full fails every write the same way.
  expect_tool "--report on a full device" 2 "No space left on device" -- \
    quantize "$M" -o "$WORK/q3.onnx" --mode dynamic --report /dev/full
fi

# --------------------------------------------------------------- killed while writing
# kill -9 at several points of a 96 MB model's conversion leaves no temporary file behind.
mkdir -p "$WORK/killed"
for delay in 0.05 0.2 0.4 0.8; do
  rm -f "$WORK/killed/out.onnx" "$WORK/killed/out.onnx.data"  # a fresh pair: no earlier result to replace
  "$ONNXTOOL" convert "$WORK/big.onnx" -o "$WORK/killed/out.onnx" --external-data >/dev/null 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  left=$(ls -A "$WORK/killed" | grep -v -e '^out\.onnx$' -e '^out\.onnx\.data$')
  [[ -z $left ]] && ok || fail "kill -9 after ${delay}s left: $left"
done

# --------------------------------------------------------------- killed between the renames of a pair
# convert --in-place of a model with external data replaces two files that refer to each other.
# A shim (LD_PRELOAD, tests/cli/rename_hook.c) ends the process right after its Nth rename; at
# every N the model on disk must run and give the old result or the new one (renaming the data
# and then the model left the old model reading the new data: "runs past the end of
# model.onnx.data").
if command -v cc >/dev/null 2>&1; then
  P=$WORK/pair
  mkdir -p "$P/ref"
  cc -shared -fPIC -o "$P/shim.so" "$SOURCE_DIR/tests/cli/rename_hook.c" -ldl || fail "in-place pair: the rename shim does not build"
  "$PYTHON" - "$P" <<'MODEL'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((256, 256)).astype(np.float32), "w")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "pair",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])], [w])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.save(m, f"{d}/model.onnx", save_as_external_data=True, location="model.onnx.data", size_threshold=1024)
np.save(f"{d}/x.npy", np.random.default_rng(2).standard_normal((1, 256)).astype(np.float32))
MODEL
  CONVERT=(convert model.onnx --in-place --to-fp16 --keep-io-types --external-data --quiet)
  cp "$P/model.onnx" "$P/model.onnx.data" "$P/ref/"
  (cd "$P/ref" && "$ONNXTOOL" run model.onnx --input "x=$P/x.npy" --output-dir old >/dev/null &&
    "$ONNXTOOL" "${CONVERT[@]}" >/dev/null && "$ONNXTOOL" run model.onnx --input "x=$P/x.npy" --output-dir new >/dev/null) ||
    fail "in-place pair: the reference runs failed"
  [[ -z $(ls -A "$P/ref" | grep '\.tmp') ]] && ok || fail "in-place pair: a side file was left: $(ls -A "$P/ref")"
  for n in 1 2 3 4; do
    rm -rf "$P/c$n" && mkdir "$P/c$n" && cp "$P/model.onnx" "$P/model.onnx.data" "$P/c$n/"
    (cd "$P/c$n" && RENAME_HOOK_CRASH_AT=$n LD_PRELOAD=$P/shim.so ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
      "$ONNXTOOL" "${CONVERT[@]}" >/dev/null 2>&1)
    rc=$?
    # The shim must have ended the run after the first rename (else this tests nothing).
    ((n > 1 || rc == 137)) && ok || fail "in-place pair: the rename shim did not end the process (exit $rc)"
    if (cd "$P/c$n" && "$ONNXTOOL" run model.onnx --input "x=$P/x.npy" --output-dir out >/dev/null 2>"$P/c$n.err") &&
      { cmp -s "$P/c$n/out/y.npy" "$P/ref/old/y.npy" || cmp -s "$P/c$n/out/y.npy" "$P/ref/new/y.npy"; }; then
      ok
    else
      fail "in-place pair killed after rename $n: the model on disk is neither the old nor the new one: $(cat "$P/c$n.err")"
    fi
  done
else
  missing_data "a C compiler (cc) for the rename shim"
fi

# --------------------------------------------------------------- external data swapped for a symlink
# A loop replaces the data file with a symlink to a secret of the same size and back, while
# the model is converted with its weights inlined: each run either refuses (exit 2, one line)
# or inlines the real weights; the secret never reaches the output.
mkdir -p "$WORK/race"
cp "$WORK/ext/m.onnx" "$WORK/race/m.onnx"
cp "$WORK/ext/m.onnx.data" "$WORK/race/real.data"
size=$(stat -c %s "$WORK/race/real.data")
head -c "$size" /dev/zero | tr '\0' 'S' >"$WORK/secret"
(
  cd "$WORK/race" || exit 1
  end=$((SECONDS + 8))
  while ((SECONDS < end)); do
    cp real.data next.data && mv -T next.data m.onnx.data
    ln -sf "$WORK/secret" next.link && mv -T next.link m.onnx.data
  done
  cp real.data m.onnx.data
) &
swapper=$!
leaked=0 refused=0 converted=0 other=0
for i in $(seq 1 60); do
  "$ONNXTOOL" convert "$WORK/race/m.onnx" -o "$WORK/race_out.onnx" --inline-external-data >/dev/null 2>"$WORK/stderr"
  rc=$?
  if [[ $rc -eq 0 ]]; then
    if grep -q SSSSSSSS "$WORK/race_out.onnx"; then leaked=$((leaked + 1)); else converted=$((converted + 1)); fi
  elif [[ $rc -eq 2 && $(grep -c '' "$WORK/stderr") -eq 1 ]]; then
    refused=$((refused + 1))
  else
    other=$((other + 1))
    echo "race: exit $rc: $(head -c 200 "$WORK/stderr")"
  fi
done
wait "$swapper"
echo "symlink swap race: $converted converted, $refused refused, $leaked leaked, $other other"
[[ $leaked -eq 0 && $other -eq 0 && $refused -gt 0 ]] && ok || fail "symlink swap race: $leaked leaked the secret, $other other outcomes, $refused refused"

# --------------------------------------------------------------- a model truncated while read
# The model is mapped: a page past its new end raises SIGBUS. Whatever the moment, the outcome
# is a result (exit 0) or one line naming a file (exit 2), never a signal.
for i in 1 2 3 4 5 6 7 8 9 10; do
  cp "$WORK/big.onnx" "$WORK/trunc.onnx"
  if (( i % 2 )); then
    "$ONNXTOOL" run "$WORK/trunc.onnx" --random >/dev/null 2>"$WORK/stderr" &
  else
    "$ONNXTOOL" convert "$WORK/trunc.onnx" -o "$WORK/trunc_out.onnx" --opset 14 --no-verify >/dev/null 2>"$WORK/stderr" &
  fi
  pid=$!
  sleep "0.0$((i * 4))"
  truncate -s 1000 "$WORK/trunc.onnx"
  wait "$pid"
  rc=$?
  if [[ $rc -eq 0 ]] || { [[ $rc -eq 2 && $(grep -c '' "$WORK/stderr") -eq 1 ]] && grep -q "trunc" "$WORK/stderr"; }; then ok
  else fail "a model truncated while read (try $i): exit $rc: $(head -c 300 "$WORK/stderr")"; fi
done

finish
