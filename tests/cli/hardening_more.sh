#!/usr/bin/env bash
# The smaller hazards of the third hardening pass: a replaced file keeps its mode and owner, a
# read-only one is refused; a FIFO nobody reads, /dev/stdout on a pipe; names longer than a file
# name may be, not UTF-8, or holding terminal escapes; .npy headers giving a key twice, .pb
# tensors with two data fields; environment numbers; sparse initializers; chained renames; empty
# verification shapes and data file names; --dump-dir's bounds, and no partial dump after a
# failed run.
#
# Environment: ONNXTOOL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
make_work hardening_more
EXPECT_TIMEOUT=60

"$PYTHON" - "$WORK" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
save = lambda g, name: onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}.onnx")
w = numpy_helper.from_array(np.arange(4096, dtype=np.float32).reshape(64, 64) / 4096, "w")
save(helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "small", [f("x", [1, 64])], [f("y", [1, 64])], [w]), "small")
np.save(f"{d}/x.npy", np.ones((1, 64), np.float32))
np.save(f"{d}/x2.npy", np.array([1.5, -2.0], np.float32))
# A tf2onnx-like value name of 275 bytes between two nodes, and as the output.
long = "model/" + "fused_conv_bn_relu/" * 14 + "out"
save(helper.make_graph([helper.make_node("Relu", ["x"], [long]), helper.make_node("Neg", [long], ["y"])], "g", [f("x", [2])],
                       [f("y", [2])]), "long_inner")
save(helper.make_graph([helper.make_node("Relu", ["x"], [long])], "g", [f("x", [2])], [f(long, [2])]), "long_output")
# Output names with a terminal escape and a carriage return; one that is not UTF-8 (patched in).
esc = "y\x1b[2K\rPASS"
save(helper.make_graph([helper.make_node("Relu", ["x"], [esc])], "g", [f("x", [2])], [f(esc, [2])]), "escape")
save(helper.make_graph([helper.make_node("Relu", ["x"], ["yQQ"])], "g", [f("x", [2])], [f("yQQ", [2])]), "latin")
data = open(f"{d}/latin.onnx", "rb").read().replace(b"yQQ", b"y\xff\xfe")
open(f"{d}/latin.onnx", "wb").write(data)
# A sparse initializer: w of [3, 4] with three values.
sp = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.5, -2.0, 3.0], np.float32), "w"),
                               numpy_helper.from_array(np.array([0, 5, 11], np.int64), "w_idx"), [3, 4])
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [f("x", [1, 3])], [f("y", [1, 4])], sparse_initializer=[sp])
save(g, "sparse")
np.save(f"{d}/x13.npy", np.array([[1, 2, 3]], np.float32))
# A .npy whose header gives 'descr' twice (numpy takes the last: <f8); a .pb with two data fields.
header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'descr': '<f8', }"
header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
open(f"{d}/two_descr.npy", "wb").write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + np.zeros(2, "<f8").tobytes())
header = b"{'descr': '<U0', 'fortran_order': False, 'shape': (1000000000,), }"
header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
open(f"{d}/u0.npy", "wb").write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
t = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "x")
t.float_data.extend([3.0, 4.0])
open(f"{d}/two_fields.pb", "wb").write(t.SerializeToString())
# A Loop that never ends, its body's values dumped at every iteration.
body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Add", ["s_in", "one"], ["s_out"])], "body",
                         [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                          f("s_in", [1])], [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), f("s_out", [1])],
                         [numpy_helper.from_array(np.ones(1, np.float32), "one")])
save(helper.make_graph([helper.make_node("Loop", ["M", "", "x"], ["y"], body=body, name="forever")], "g", [f("x", [1])], [f("y", [1])],
                       [numpy_helper.from_array(np.array(2**63 - 1, np.int64), "M")]), "forever")
np.save(f"{d}/x1.npy", np.zeros(1, np.float32))
EOF
M=$WORK/small.onnx

# --- a replaced file keeps its mode and owner; a read-only one is refused
cp "$M" "$WORK/theirs.onnx"
chmod 600 "$WORK/theirs.onnx"
owner=$(id -u)
if [[ $owner -eq 0 ]] && id nobody >/dev/null 2>&1; then chown nobody "$WORK/theirs.onnx"; fi
before=$(stat -c '%a %U %G' "$WORK/theirs.onnx")
expect_tool "replacing a 0600 file" 0 "wrote" -- convert "$M" -o "$WORK/theirs.onnx" --opset 14
[[ $(stat -c '%a %U %G' "$WORK/theirs.onnx") == "$before" ]] && ok ||
  fail "the replaced file became $(stat -c '%a %U %G' "$WORK/theirs.onnx") (was $before)"
cp "$M" "$WORK/ro.onnx"
chmod 444 "$WORK/ro.onnx"
ro_hash=$(sha256sum <"$WORK/ro.onnx")
expect_tool "a read-only output" 2 "is read-only (mode 0444)" -- convert "$M" -o "$WORK/ro.onnx" --opset 14
[[ $(sha256sum <"$WORK/ro.onnx") == "$ro_hash" ]] && ok || fail "the read-only file was replaced"

# --- a FIFO nothing reads; /dev/stdout on a pipe
mkfifo "$WORK/fifo"
expect_tool "-o a FIFO nothing reads" 2 "is a FIFO that nothing reads" -- convert "$M" -o "$WORK/fifo" --opset 14
bytes=$("$ONNXTOOL" convert "$M" -o /dev/stdout --opset 14 --no-verify 2>"$WORK/err" | wc -c)
[[ $bytes -gt 16000 ]] && ok || fail "-o /dev/stdout on a pipe: $bytes bytes, $(cat "$WORK/err")"

# --- long names: a shortened file name, recorded in index.json; --output-dir and --expect agree
expect_tool "--dump-dir with a 275-byte value name" 0 "dumped 2 values" -- run "$WORK/long_inner.onnx" --input "x=$WORK/x2.npy" --dump-dir "$WORK/dump_long"
"$PYTHON" - "$WORK/dump_long" <<'EOF' && ok || fail "index.json does not give the long value's file"
import json, os, sys
d = sys.argv[1]
index = json.load(open(os.path.join(d, "index.json")))["tensors"]
long = [k for k in index if len(k) > 255][0]
f = index[long]["file"]
assert len(f) <= 255 and os.path.exists(os.path.join(d, f)), f
EOF
expect_tool "--output-dir with a 275-byte output name" 0 "" -- run "$WORK/long_output.onnx" --input "x=$WORK/x2.npy" --output-dir "$WORK/long_out"
expect_tool "--expect finds it again" 0 "" -- run "$WORK/long_output.onnx" --input "x=$WORK/x2.npy" --expect "$WORK/long_out"

# --- names with terminal escapes are written as text; names that are not UTF-8 in --json
"$ONNXTOOL" run "$WORK/escape.onnx" --input "x=$WORK/x2.npy" >"$WORK/esc.out" 2>&1
grep -q $'\x1b' "$WORK/esc.out" && fail "a terminal escape reached stdout" || ok
grep -qF 'y\x1b[2K\x0dPASS' "$WORK/esc.out" && ok || fail "the escaped name is not shown: $(cat -v "$WORK/esc.out")"
expect_tool "--json with a name that is not UTF-8" 0 "" -- run "$WORK/latin.onnx" --input "x=$WORK/x2.npy" --json
"$PYTHON" -c 'import json, sys; json.load(open(sys.argv[1]))' "$WORK/stdout" && ok || fail "--json is not JSON: $(head -c 300 "$WORK/stdout")"
expect_tool "--dump-dir with a name that is not UTF-8" 0 "dumped" -- run "$WORK/latin.onnx" --input "x=$WORK/x2.npy" --dump-dir "$WORK/dump_latin"

# --- tensor files that mean two things
expect_tool ".npy giving 'descr' twice" 2 "gives 'descr' twice" -- run "$WORK/long_inner.onnx" --input "x=$WORK/two_descr.npy"
expect_tool "a 128-byte .npy of a billion empty strings (<U0)" 2 "has length 0" -- run "$WORK/long_inner.onnx" --input "x=$WORK/u0.npy"
expect_tool ".pb with raw_data and float_data" 2 "more than one field" -- run "$WORK/long_inner.onnx" --input "x=$WORK/two_fields.pb"

# --- environment numbers
for v in abc -1 1e30; do
  ONNXTOOL_PER_LAYER_MEMORY=$v expect_tool "ONNXTOOL_PER_LAYER_MEMORY=$v" 2 "ONNXTOOL_PER_LAYER_MEMORY: '$v' is not a number of bytes" -- \
    compare "$M" "$M" --random --per-layer
  ONNXTOOL_VULKAN_MEMORY_LIMIT=$v expect_tool "ONNXTOOL_VULKAN_MEMORY_LIMIT=$v" 2 "ONNXTOOL_VULKAN_MEMORY_LIMIT: '$v' is not a number of bytes" -- \
    run "$M" --random --device vulkan
done

# --- a sparse initializer runs as its dense tensor
expect_tool "run a model with a sparse initializer" 0 "" -- run "$WORK/sparse.onnx" --input "x=$WORK/x13.npy" --output-dir "$WORK/sparse_out"
"$PYTHON" -c 'import numpy as np, sys; y = np.load(sys.argv[1]); assert np.array_equal(y, [[1.5, -4, 0, 9]]), y' "$WORK/sparse_out/y.npy" &&
  ok || fail "the sparse initializer's product is wrong"

# --- chained renames; empty shapes and names
expect_tool "edit: chained renames x=a, a=b" 0 "wrote" -- edit "$M" -o "$WORK/renamed.onnx" --rename-input x=a --rename-input a=b --set-input-shape b=1,64
expect_tool "the chained rename's result" 0 "b" -- inspect "$WORK/renamed.onnx"
expect_tool "--fix-input-shape with a dim of 0" 2 "a dim of 0 makes an empty tensor" -- optimize "$M" -o "$WORK/o.onnx" --fix-input-shape x=0,64
expect_tool "--data-file ''" 2 "--data-file: an empty name" -- convert "$M" -o "$WORK/d.onnx" --external-data --data-file ''

# --- --dump-dir's bounds; a failed run leaves no dump
expect_tool "--max-dump-files 1" 0 "stopped at --max-dump-files 1" -- run "$WORK/long_inner.onnx" --input "x=$WORK/x2.npy" --dump-dir "$WORK/dump1" --max-dump-files 1
[[ $(find "$WORK/dump1" -name '*.npy' | wc -l) -eq 1 ]] && ok || fail "--max-dump-files 1 wrote $(ls "$WORK/dump1")"
grep -q '"skipped": "stopped at --max-dump-files 1"' "$WORK/dump1/index.json" && ok || fail "index.json does not list the skipped value"
expect_tool "--max-dump-bytes 4" 0 "stopped at --max-dump-bytes 4" -- run "$WORK/long_inner.onnx" --input "x=$WORK/x2.npy" --dump-dir "$WORK/dump2" --max-dump-bytes 4
expect_tool "--max-dump-files without --dump-dir" 2 "add --dump-dir" -- run "$M" --random --max-dump-files 5
expect_tool "a run that fails while dumping" 2 "--time-limit 2 ran out" -- run "$WORK/forever.onnx" --input "x=$WORK/x1.npy" --dump-dir "$WORK/dump_failed" --time-limit 2
[[ ! -e $WORK/dump_failed ]] && ok || fail "the failed run left $(ls "$WORK/dump_failed" | wc -l) files in its dump"
finish
