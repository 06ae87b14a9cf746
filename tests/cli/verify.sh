#!/usr/bin/env bash
# Verification on by default: `optimize` and `convert --opset/--to-fp16` run the result against
# the original before writing. A result beyond tolerance, or an original that cannot run on the
# verification inputs, exits 1 with one stderr line and writes nothing; --no-verify writes; --json
# reports what was compared. The float16 range guard keeps values beyond float16's range in
# float32: an x^2 of x = 1000 * input overflows float16 (1e6 > 65504) without it; the accuracy
# guide keeps where float16 departs beyond tolerance ((x + 1000) - 1000) in float32.
#
# Environment: ONNXTOOL (the binary).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
make_work verify

"$PYTHON" - "$WORK" <<'EOF2'
import sys
import onnx
from onnx import TensorProto, helper
d = sys.argv[1]
f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
# A BatchNormalization after a Conv: folding it changes float bits (the tolerance test).
import numpy as np
rng = np.random.default_rng(1)
init = [helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], rng.standard_normal(108).astype(np.float32)),
        helper.make_tensor("s", TensorProto.FLOAT, [4], rng.uniform(0.5, 2, 4).astype(np.float32)),
        helper.make_tensor("b", TensorProto.FLOAT, [4], rng.standard_normal(4).astype(np.float32)),
        helper.make_tensor("m", TensorProto.FLOAT, [4], rng.standard_normal(4).astype(np.float32)),
        helper.make_tensor("v", TensorProto.FLOAT, [4], rng.uniform(0.5, 2, 4).astype(np.float32))]
g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                       helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"])],
                      "convbn", [f("x", ["N", 3, 8, 8])], [f("y", None)], init)
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/convbn.onnx")
# Gather with a data-dependent index: random indices in [0, 10) fall outside a dim of 4.
g = helper.make_graph([helper.make_node("Gather", ["t", "i"], ["y"])], "gather",
                      [helper.make_tensor_value_info("i", TensorProto.INT64, [3])], [f("y", None)],
                      [helper.make_tensor("t", TensorProto.FLOAT, [4], [1, 2, 3, 4])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/gather.onnx")
# sqrt((1000 x)^2): exact in float32, 1e6 overflows float16 in between.
g = helper.make_graph([helper.make_node("Mul", ["x", "k"], ["big"]),
                       helper.make_node("Mul", ["big", "big"], ["square"]),
                       helper.make_node("Sqrt", ["square"], ["root"]),
                       helper.make_node("Div", ["root", "k"], ["y"])], "range",
                      [f("x", [1, 16])], [f("y", None)],
                      [helper.make_tensor("k", TensorProto.FLOAT, [], [1000])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/range.onnx")
# (x + 1000) - 1000, squared: float16 keeps 0.5 steps at 1000, so y loses everything below
# that; no value leaves float16's range. Keeping the Sub in float32 is not enough (its input is
# already rounded): the Add must be float32 too.
g = helper.make_graph([helper.make_node("Add", ["x", "c"], ["a"], name="add_offset"),
                       helper.make_node("Sub", ["a", "c"], ["d"], name="sub_offset"),
                       helper.make_node("Mul", ["d", "d"], ["y"], name="square")], "offset",
                      [f("x", ["N", 8])], [f("y", None)],
                      [helper.make_tensor("c", TensorProto.FLOAT, [1], [1000])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/offset.onnx")
np.save(f"{d}/ones.npy", np.ones((1, 16), np.float32))
np.save(f"{d}/index.npy", np.array([0, 3, 1], np.int64))
EOF2

# --- optimize
expect_tool "optimize verifies by default" 0 "verified 1 output(s) on random (seed 0;" -- \
  optimize "$WORK/convbn.onnx" -o "$OUT/o.onnx"
"$ONNXTOOL" optimize "$WORK/convbn.onnx" -o "$WORK/j.onnx" --json >"$WORK/j.json" 2>&1
if "$PYTHON" -c '
import json, sys
v = json.load(open(sys.argv[1]))["verification"]
assert v["ok"] and v["tolerance"]["policy"] == "rewrite" and v["tolerance"]["rtol"] == 1e-4, v
assert v["outputs"][0]["name"] == "y" and v["outputs"][0]["within"] and not v["outputs"][0]["exact"], v
assert "x=float[1,3,8,8]" in v["inputs"], v
' "$WORK/j.json"; then ok; else fail "optimize --json verification: $(cat "$WORK/j.json")"; fi
expect_tool "beyond tolerance names the output and the first diverging pass" 1 \
  "output 'y': max abs error" -- optimize "$WORK/convbn.onnx" -o "$OUT/o.onnx" --rtol 0 --atol 0
if grep -qF "first diverging pass: fuse_conv_batchnorm" "$WORK/stderr"; then ok; else fail "no diverging pass: $(cat "$WORK/stderr")"; fi
expect_tool "--no-verify writes" 0 "not verified (--no-verify)" -- optimize "$WORK/convbn.onnx" -o "$OUT/o.onnx" --no-verify
# Verification flags with --no-verify would be ignored: refused by every writer alike.
expect_tool "optimize: tolerances with --no-verify" 2 "--rtol and --atol: they choose how the result is verified" -- \
  optimize "$WORK/convbn.onnx" -o "$OUT/o.onnx" --rtol 0 --atol 0 --no-verify
expect_tool "optimize: --verify with --no-verify" 2 "--verify: they choose" -- optimize "$WORK/convbn.onnx" -o "$OUT/o.onnx" --verify --no-verify
expect_tool "convert: inputs with --no-verify" 2 "--seed: they choose how the result is verified" -- \
  convert "$WORK/convbn.onnx" -o "$OUT/o.onnx" --opset 17 --seed 3 --no-verify
expect_tool "an original that cannot run on random inputs" 1 "cannot verify: the original model does not run on random inputs" -- \
  optimize "$WORK/gather.onnx" -o "$OUT/o.onnx"
expect_tool "... verifies on given inputs" 0 "verified 1 output(s) on files" -- \
  optimize "$WORK/gather.onnx" -o "$OUT/o.onnx" --input "i=$WORK/index.npy"
expect_tool "... or writes with --no-verify" 0 "not verified" -- optimize "$WORK/gather.onnx" -o "$OUT/o.onnx" --no-verify

# --- convert
expect_tool "convert --opset verifies" 0 "verified 1 output(s)" -- convert "$WORK/convbn.onnx" -o "$OUT/c.onnx" --opset 9
expect_tool "convert without rewrites does not run the model" 0 "wrote" -- convert "$WORK/gather.onnx" -o "$OUT/c.onnx"
if ! grep -q "verified" "$WORK/stdout"; then ok; else fail "a lossless re-save ran verification"; fi

# --- float16 range guard
expect_tool "fp16: range guard keeps the overflowing values in float32" 0 "kept in float32 for range" -- \
  convert "$WORK/range.onnx" -o "$OUT/h.onnx" --to-fp16 --keep-io-types --input "x=$WORK/ones.npy"
cp "$OUT/h.onnx" "$WORK/guarded.onnx"
"$ONNXTOOL" convert "$WORK/range.onnx" -o "$WORK/unguarded.onnx" --to-fp16 --keep-io-types --no-verify >/dev/null 2>&1
"$ONNXTOOL" run "$WORK/guarded.onnx" --input "x=$WORK/ones.npy" --output-dir "$WORK/g" >/dev/null 2>&1
"$ONNXTOOL" run "$WORK/unguarded.onnx" --input "x=$WORK/ones.npy" --output-dir "$WORK/u" >/dev/null 2>&1
if "$PYTHON" -c '
import sys, numpy as np
g, u = np.load(sys.argv[1]), np.load(sys.argv[2])
assert np.allclose(g, 1, rtol=1e-3), g
assert not np.isfinite(u).any(), u  # the check proves the guard is needed
' "$WORK/g/y.npy" "$WORK/u/y.npy"; then ok; else fail "fp16 range guard: guarded or unguarded results unexpected"; fi
"$ONNXTOOL" convert "$WORK/range.onnx" -o "$WORK/h.onnx" --to-fp16 --keep-io-types --input "x=$WORK/ones.npy" --json >"$WORK/h.json" 2>&1
if "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["precision"]["range_blocked"]) >= 2 and d["verification"]["tolerance"]["policy"] == "float16", d
' "$WORK/h.json"; then ok; else fail "fp16 --json range_blocked: $(cat "$WORK/h.json")"; fi

# --- float16 accuracy guide
expect_tool "fp16: where float16 departs beyond tolerance stays float32" 0 "kept in float32 for accuracy" -- \
  convert "$WORK/offset.onnx" -o "$OUT/a.onnx" --to-fp16 --keep-io-types
if grep -qF "node 'add_offset' (Add)" "$WORK/stdout" && grep -qF "node 'sub_offset' (Sub)" "$WORK/stdout"; then ok
else fail "fp16 accuracy guide: Add and Sub not named: $(cat "$WORK/stdout")"; fi
"$ONNXTOOL" convert "$WORK/offset.onnx" -o "$WORK/a.onnx" --to-fp16 --json >"$WORK/a.json" 2>&1
"$ONNXTOOL" convert "$WORK/offset.onnx" -o "$WORK/a_unguided.onnx" --to-fp16 --no-verify >/dev/null 2>&1
"$PYTHON" -c '
import numpy as np
np.save("'"$WORK"'/x.npy", np.random.default_rng(3).uniform(0, 1, (4, 8)).astype(np.float32))
np.save("'"$WORK"'/x16.npy", np.load("'"$WORK"'/x.npy").astype(np.float16))'
"$ONNXTOOL" run "$WORK/a.onnx" --input "x=$WORK/x16.npy" --output-dir "$WORK/ga" >/dev/null 2>&1
"$ONNXTOOL" run "$WORK/a_unguided.onnx" --input "x=$WORK/x16.npy" --output-dir "$WORK/ua" >/dev/null 2>&1
if "$PYTHON" -c '
import json, sys, numpy as np
d = json.load(open(sys.argv[1]))["precision"]
assert {"a", "d"} <= set(d["accuracy_values"]) and d["accuracy_rounds"] >= 2, d
x = np.load(sys.argv[4]).astype(np.float32)
g, u = np.load(sys.argv[2]).astype(np.float32), np.load(sys.argv[3]).astype(np.float32)
assert np.abs(g - x * x).max() < 1e-2, np.abs(g - x * x).max()
assert np.abs(u - x * x).max() > 0.05, np.abs(u - x * x).max()  # the guide is needed
' "$WORK/a.json" "$WORK/ga/y.npy" "$WORK/ua/y.npy" "$WORK/x16.npy"; then ok
else fail "fp16 accuracy guide: $(cat "$WORK/a.json")"; fi

finish
