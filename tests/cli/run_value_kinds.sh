#!/usr/bin/env bash
# Every value kind through `onnxtool run` (issue 20): sequences and optionals in and out (.pb
# SequenceProto / OptionalProto), strings in and out as .npy unicode arrays and as .pb, bfloat16
# in and out as .pb, --expect against a test_data_set folder and against what --output-dir wrote
# (the golden round trip), matching and differing, and the statistics of --json. Then the bad
# files of each kind: each must exit 2 with one stderr line naming the file, and leave no output.
#
# Environment: ONNXTOOL (the binary). Needs Debian's python3 with python3-onnx and numpy to
# write the models and files (else skipped: exit 77).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
make_work run_value_kinds
D=$WORK/files
mkdir -p "$D"

"$PYTHON" - "$D" <<'EOF' || { echo "FAIL: could not write the test files"; exit 1; }
import os, struct, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

d = sys.argv[1]
F, I64, S, BF16 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.STRING, TensorProto.BFLOAT16

def save_model(name, nodes, inputs, outputs, opset=18):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(d, name + ".onnx"))

def write(name, message):
    with open(os.path.join(d, name), "wb") as f:
        f.write(message.SerializeToString())

def folder(name, files):
    os.makedirs(os.path.join(d, name))
    for f, message in files.items():
        write(os.path.join(name, f), message)

seq_f = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
opt_f = helper.make_optional_type_proto(helper.make_tensor_type_proto(F, None))
# seq: s seq(float), x float[2] -> out = s + [x] (a sequence), n = its length (int64)
save_model("seq", [helper.make_node("SequenceInsert", ["s", "x"], ["out"]),
                   helper.make_node("SequenceLength", ["out"], ["n"])],
           [helper.make_value_info("s", seq_f), helper.make_tensor_value_info("x", F, [2])],
           [helper.make_value_info("out", seq_f), helper.make_tensor_value_info("n", I64, [])])
# opt: o optional(float) -> has (bool), same (the optional itself)
save_model("opt", [helper.make_node("OptionalHasElement", ["o"], ["has"]),
                   helper.make_node("Identity", ["o"], ["same"])],
           [helper.make_value_info("o", opt_f)],
           [helper.make_tensor_value_info("has", TensorProto.BOOL, []), helper.make_value_info("same", opt_f)])
# str: s string[3] -> t (the same strings)
save_model("str", [helper.make_node("Identity", ["s"], ["t"])],
           [helper.make_tensor_value_info("s", S, [3])], [helper.make_tensor_value_info("t", S, [3])])
# bf16: x bfloat16[3] -> y float (Cast), z bfloat16 (the same)
save_model("bf16", [helper.make_node("Cast", ["x"], ["y"], to=F), helper.make_node("Identity", ["x"], ["z"])],
           [helper.make_tensor_value_info("x", BF16, [3])],
           [helper.make_tensor_value_info("y", F, [3]), helper.make_tensor_value_info("z", BF16, [3])])
# map: m map(string, float) (unused) and x float[2] -> y
map_type = onnx.TypeProto()
map_type.map_type.key_type = S
map_type.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(F, None))
save_model("map", [helper.make_node("Identity", ["x"], ["y"])],
           [helper.make_value_info("m", map_type), helper.make_tensor_value_info("x", F, [2])],
           [helper.make_tensor_value_info("y", F, [2])])

a = np.array([1, 2], np.float32)
b = np.array([3, 4, 5], np.float32)
x = np.array([6, 7], np.float32)
seq = numpy_helper.from_list([a, b], "s")
write("seq.pb", seq)
write("x.pb", numpy_helper.from_array(x, "x"))
np.save(os.path.join(d, "x.npy"), x)
# the seq model's test_data_set: inputs by position, outputs as the ONNX suite stores them
out_seq = numpy_helper.from_list([a, b, x], "out")
folder("seq_set", {"input_0.pb": seq, "input_1.pb": numpy_helper.from_array(x, "x"),
                   "output_0.pb": out_seq, "output_1.pb": numpy_helper.from_array(np.array(3, np.int64), "n")})
# the same with the sequence's last item off by 1 in one element
folder("seq_bad_set", {"input_0.pb": seq, "input_1.pb": numpy_helper.from_array(x, "x"),
                       "output_0.pb": numpy_helper.from_list([a, b, np.array([6, 8], np.float32)], "out"),
                       "output_1.pb": numpy_helper.from_array(np.array(3, np.int64), "n")})
write("opt_full.pb", numpy_helper.from_optional(a, "o", dtype=onnx.OptionalProto.TENSOR))
write("opt_empty.pb", numpy_helper.from_optional(None, "o", dtype=onnx.OptionalProto.TENSOR))
np.save(os.path.join(d, "strings.npy"), np.array(["héllo", "日本語 ✓", ""]))
write("strings.pb", numpy_helper.from_array(np.array([b"a", b"bc", b""], dtype=object), "s"))
write("strings_not_utf8.pb", numpy_helper.from_array(np.array([b"\xff", b"a", b"b"], dtype=object), "s"))
bf = np.array([0x3f80, 0xc000, 0x4049], np.uint16)  # 1, -2, 3.140625
write("bf16.pb", helper.make_tensor("x", BF16, [3], bf.tobytes(), raw=True))
np.save(os.path.join(d, "bf16_as_u16.npy"), bf)

# bad files
raw = seq.SerializeToString()
with open(os.path.join(d, "seq_truncated.pb"), "wb") as f:
    f.write(raw[: len(raw) - 5])
raw = numpy_helper.from_array(x, "x").SerializeToString()
with open(os.path.join(d, "x_truncated.pb"), "wb") as f:
    f.write(raw[: len(raw) - 3])
mixed = onnx.SequenceProto()
mixed.name, mixed.elem_type = "s", onnx.SequenceProto.TENSOR
mixed.tensor_values.extend([numpy_helper.from_array(a), numpy_helper.from_array(np.array([1], np.int64))])
write("seq_mixed.pb", mixed)
write("seq_int.pb", numpy_helper.from_list([np.array([1], np.int64)], "s"))
write("opt_x.pb", numpy_helper.from_optional(x, "x", dtype=onnx.OptionalProto.TENSOR))
header = "{'descr': '<Ux', 'fortran_order': False, 'shape': (3,), }"
header += " " * (63 - (10 + len(header)) % 64) + "\n"
with open(os.path.join(d, "strings_bad_header.npy"), "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + b"\0" * 12)
m = onnx.MapProto()
m.name, m.key_type = "m", S
write("map.pb", m)
EOF

# --- sequences in and out
expect_tool "sequence in, out as .pb" 0 "out.pb" -- run "$D/seq.onnx" --input s="$D/seq.pb" --input x="$D/x.npy" --output-dir "$OUT/r"
"$PYTHON" - "$OUT/r" <<'EOF' && ok || fail "the sequence written is not s + [x]"
import sys, numpy as np, onnx
from onnx import numpy_helper
s = onnx.SequenceProto()
s.ParseFromString(open(sys.argv[1] + "/out.pb", "rb").read())
items = numpy_helper.to_list(s)
assert [i.tolist() for i in items] == [[1, 2], [3, 4, 5], [6, 7]], items
assert np.load(sys.argv[1] + "/n.npy").tolist() == 3
EOF
expect_tool "sequence test_data_set, --expect" 0 "out: matches" -- run "$D/seq.onnx" --inputs "$D/seq_set" --expect "$D/seq_set"
expect_tool "sequence --expect differs" 1 "item 2 element [1]" -- run "$D/seq.onnx" --inputs "$D/seq_set" --expect "$D/seq_bad_set"
grep -qF "onnxtool run: output 'out' differs" "$WORK/stderr" || fail "the mismatch line does not name the output: $(cat "$WORK/stderr")"
# compare --expect reads them through the same matcher (it once answered "not a tensor")
expect_tool "compare, sequence --expect" 0 "" -- compare "$D/seq.onnx" --inputs "$D/seq_set" --expect "$D/seq_set"
expect_tool "compare, sequence --expect differs" 1 "out" -- compare "$D/seq.onnx" --inputs "$D/seq_set" --expect "$D/seq_bad_set"
# golden outputs: what --output-dir writes, --expect reads (npy tensors, pb sequences)
"$ONNXTOOL" run "$D/seq.onnx" --inputs "$D/seq_set" --output-dir "$WORK/golden" >/dev/null 2>&1 || fail "writing golden outputs failed"
expect_tool "golden round trip" 0 "n: matches" -- run "$D/seq.onnx" --inputs "$D/seq_set" --expect "$WORK/golden"
"$ONNXTOOL" run "$D/seq.onnx" --inputs "$D/seq_set" --output-dir "$WORK/golden_pb" --output-format pb >/dev/null 2>&1 || fail "writing golden .pb outputs failed"
expect_tool "golden round trip, pb" 0 "n: matches" -- run "$D/seq.onnx" --inputs "$D/seq_set" --expect "$WORK/golden_pb"
expect_tool "golden differs" 1 "element [1]: 7 vs expected 8" -- run "$D/seq.onnx" --input s="$D/seq.pb" --input x="$D/x.npy" --expect "$D/seq_bad_set"

# --- optionals in and out
expect_tool "optional in (present)" 0 "same.pb" -- run "$D/opt.onnx" --input o="$D/opt_full.pb" --output-dir "$OUT/r"
"$PYTHON" - "$OUT/r" 1 <<'EOF' && ok || fail "the optional written is not o"
import sys, numpy as np, onnx
from onnx import numpy_helper
o = onnx.OptionalProto()
o.ParseFromString(open(sys.argv[1] + "/same.pb", "rb").read())
v = numpy_helper.to_optional(o)
assert (v is not None) == (sys.argv[2] == "1"), v
if v is not None: assert v.tolist() == [1, 2], v
assert np.load(sys.argv[1] + "/has.npy").tolist() == (sys.argv[2] == "1")
EOF
expect_tool "optional in (empty)" 0 "optional(empty)" -- run "$D/opt.onnx" --input o="$D/opt_empty.pb" --output-dir "$OUT/r"
"$PYTHON" - "$OUT/r" 0 <<'EOF' && ok || fail "the empty optional written is not empty"
import sys, onnx
from onnx import numpy_helper
o = onnx.OptionalProto()
o.ParseFromString(open(sys.argv[1] + "/same.pb", "rb").read())
assert numpy_helper.to_optional(o) is None
EOF
expect_tool "optional in from .npy" 0 "has: bool" -- run "$D/opt.onnx" --input o="$D/x.npy"
"$ONNXTOOL" run "$D/opt.onnx" --input o="$D/opt_empty.pb" --output-dir "$WORK/golden_opt" >/dev/null 2>&1 || fail "writing the empty optional failed"
expect_tool "empty optional round trip" 0 "same: matches" -- run "$D/opt.onnx" --input o="$D/opt_empty.pb" --expect "$WORK/golden_opt"
expect_tool "empty optional vs present" 1 "and 1 more output(s) differ" -- run "$D/opt.onnx" --input o="$D/opt_full.pb" --expect "$WORK/golden_opt"
grep -qF "same: differs from $WORK/golden_opt/same.pb: optional(float[2]) vs expected optional(empty)" "$WORK/stdout" && ok ||
  fail "the optional's mismatch is not listed: $(cat "$WORK/stdout")"

# --- strings in and out
expect_tool "strings in and out as .npy" 0 "t.npy" -- run "$D/str.onnx" --input s="$D/strings.npy" --output-dir "$OUT/r"
"$PYTHON" - "$OUT/r" <<'EOF' && ok || fail "the strings written are not the input's"
import sys, numpy as np
t = np.load(sys.argv[1] + "/t.npy")
assert t.dtype.kind == "U" and t.tolist() == ["héllo", "日本語 ✓", ""], (t.dtype, t)
EOF
expect_tool "strings in .pb, out as .pb" 0 "t.pb" -- run "$D/str.onnx" --input s="$D/strings.pb" --output-dir "$OUT/r" --output-format pb
"$PYTHON" - "$OUT/r" <<'EOF' && ok || fail "the strings written as .pb are not the input's"
import sys, onnx
t = onnx.TensorProto()
t.ParseFromString(open(sys.argv[1] + "/t.pb", "rb").read())
assert list(t.string_data) == [b"a", b"bc", b""], t
EOF
"$ONNXTOOL" run "$D/str.onnx" --input s="$D/strings.npy" --output-dir "$WORK/golden_str" >/dev/null 2>&1 || fail "writing golden strings failed"
expect_tool "strings round trip" 0 "t: matches" -- run "$D/str.onnx" --input s="$D/strings.npy" --expect "$WORK/golden_str"
expect_tool "strings differ" 1 'element [0]: "a" vs expected "héllo"' -- run "$D/str.onnx" --input s="$D/strings.pb" --expect "$WORK/golden_str"

# --- bfloat16 in and out as .pb
expect_tool "bfloat16 in and out as .pb" 0 "z.pb" -- run "$D/bf16.onnx" --input x="$D/bf16.pb" --output-dir "$OUT/r" --output-format pb
"$PYTHON" - "$OUT/r" <<'EOF' && ok || fail "the bfloat16 written is not the input's"
import sys, numpy as np, onnx
from onnx import numpy_helper
z = onnx.TensorProto()
z.ParseFromString(open(sys.argv[1] + "/z.pb", "rb").read())
assert z.data_type == onnx.TensorProto.BFLOAT16 and np.frombuffer(z.raw_data, np.uint16).tolist() == [0x3f80, 0xc000, 0x4049], z
y = onnx.TensorProto()
y.ParseFromString(open(sys.argv[1] + "/y.pb", "rb").read())
assert numpy_helper.to_array(y).tolist() == [1, -2, 3.140625]
EOF
"$ONNXTOOL" run "$D/bf16.onnx" --input x="$D/bf16.pb" --output-dir "$WORK/golden_bf16" --output-format pb >/dev/null 2>&1 || fail "writing golden bfloat16 failed"
expect_tool "bfloat16 round trip" 0 "z: matches" -- run "$D/bf16.onnx" --input x="$D/bf16.pb" --expect "$WORK/golden_bf16"
# Random bfloat16 inputs, as float ones: in [-1, 1), rounded to the type.
"$ONNXTOOL" run "$D/bf16.onnx" --random --output-dir "$WORK/random_bf16" --output-format pb >/dev/null 2>&1 || fail "run --random on a bfloat16 input failed"
"$PYTHON" - "$WORK/random_bf16" <<'EOF' && ok || fail "random bfloat16 inputs are not in [-1, 1) or not rounded to bfloat16"
import sys, numpy as np, onnx
from onnx import numpy_helper
y = onnx.TensorProto()
y.ParseFromString(open(sys.argv[1] + "/y.pb", "rb").read())
v = numpy_helper.to_array(y)
assert v.shape == (3,) and np.all(v >= -1) and np.all(v < 1) and len(set(v.tolist())) == 3, v
assert np.all((v.view(np.uint32) & 0xffff) == 0), v  # bfloat16 widened: the low 16 bits are 0
EOF
# Another rank mends a stale declaration; the original cannot run on it, so it is checked only.
expect_tool "edit: another rank" 0 "checked, not run against the original: input 'x' was bfloat16[3], now of rank 2" -- \
  edit "$D/bf16.onnx" -o "$OUT/rank2.onnx" --set-input-shape x=1,3
cp "$OUT/rank2.onnx" "$WORK/rank2.onnx"
expect_tool "edit: another rank, declared" 0 "y: float[1,3]" -- inspect "$WORK/rank2.onnx"

# --- --json: the statistics and the comparison
expect_tool "--json with --expect" 0 '"max_abs_error"' -- run "$D/seq.onnx" --inputs "$D/seq_set" --expect "$D/seq_set" --json
"$PYTHON" - "$WORK/stdout" <<'EOF' && ok || fail "run --json lacks the statistics or the comparison"
import json, sys
doc = json.load(open(sys.argv[1]))
n = doc["outputs"][1]
assert (n["min"], n["max"], n["mean"]) == (3, 3, 3), n
assert doc["outputs"][0]["min"] is None and doc["outputs"][0]["expect"]["match"] is True, doc["outputs"][0]
assert doc["expect"]["match"] is True and doc["expect"]["rtol"] == 1e-3, doc["expect"]
EOF

# --- bad files: exit 2, one line naming the file, nothing written
expect_tool "truncated SequenceProto" 2 "seq_truncated.pb" -- run "$D/seq.onnx" --input s="$D/seq_truncated.pb" --input x="$D/x.npy" --output-dir "$OUT/r"
expect_tool "truncated TensorProto" 2 "x_truncated.pb" -- run "$D/seq.onnx" --input s="$D/seq.pb" --input x="$D/x_truncated.pb" --output-dir "$OUT/r"
expect_tool "SequenceProto for a tensor" 2 "seq.pb: holds a SequenceProto or OptionalProto, not a TensorProto" -- run "$D/seq.onnx" --input s="$D/seq.pb" --input x="$D/seq.pb" --output-dir "$OUT/r"
expect_tool "TensorProto for a sequence" 2 "x.pb: holds a TensorProto, not a SequenceProto" -- run "$D/seq.onnx" --input s="$D/x.pb" --input x="$D/x.npy" --output-dir "$OUT/r"
expect_tool ".npy for a sequence" 2 "x.npy: a .npy file holds one tensor" -- run "$D/seq.onnx" --input s="$D/x.npy" --input x="$D/x.npy" --output-dir "$OUT/r"
expect_tool "sequence of mixed types" 2 "seq_mixed.pb: a sequence of mixed element types" -- run "$D/seq.onnx" --input s="$D/seq_mixed.pb" --input x="$D/x.npy" --output-dir "$OUT/r"
expect_tool "sequence of another type" 2 "seq_int.pb: a sequence of int64 tensors" -- run "$D/seq.onnx" --input s="$D/seq_int.pb" --input x="$D/x.npy" --output-dir "$OUT/r"
expect_tool "OptionalProto for a tensor" 2 "opt_x.pb" -- run "$D/seq.onnx" --input s="$D/seq.pb" --input x="$D/opt_x.pb" --output-dir "$OUT/r"
expect_tool "string .npy with a bad header" 2 "strings_bad_header.npy: malformed .npy string dtype" -- run "$D/str.onnx" --input s="$D/strings_bad_header.npy" --output-dir "$OUT/r"
expect_tool "string output not UTF-8 as .npy" 2 "t.npy: string element 0 is not valid UTF-8" -- run "$D/str.onnx" --input s="$D/strings_not_utf8.pb" --output-dir "$OUT/r"
expect_tool "bfloat16 output as .npy" 2 "use --output-format pb" -- run "$D/bf16.onnx" --input x="$D/bf16.pb" --output-dir "$OUT/r"
expect_tool "uint16 .npy for bfloat16" 2 "bf16_as_u16.npy: .npy has no bfloat16" -- run "$D/bf16.onnx" --input x="$D/bf16_as_u16.npy" --output-dir "$OUT/r"
expect_tool "map input" 2 "map.pb" -- run "$D/map.onnx" --input m="$D/map.pb" --input x="$D/x.npy" --output-dir "$OUT/r"
expect_tool "--expect folder without references" 2 "no reference" -- run "$D/seq.onnx" --inputs "$D/seq_set" --expect "$D"
expect_tool "--rtol without --expect" 2 "--rtol" -- run "$D/seq.onnx" --inputs "$D/seq_set" --rtol 0.1
expect_tool "--output-format without --output-dir" 2 "--output-format" -- run "$D/seq.onnx" --inputs "$D/seq_set" --output-format pb
finish
