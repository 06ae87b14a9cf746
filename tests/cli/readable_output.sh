#!/usr/bin/env bash
# Output a person can read and trust (issue 43): `diff --summary` gives a few lines of counts
# (and a summary object with --json) where the full diff of a model and its quantized twin runs
# to hundreds of lines, with the same exit code; quantize of a float16 model reports the weights'
# bytes as stored (2 per element, not float32's 4) and its ratio rounded; `run` casts a float32
# .npy to a float16 input, saying so in one line.
#
# Needs the PaddleOCR cls model (testdata/fetch_models.sh) and python3 for the JSON checks.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
shopt -s extglob
CLS=$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx  # x: float[?,3,?,?]
needs_file "$CLS"
needs_python json
make_work readable_output

# --- diff --summary: a model and its quantized twin.
"$ONNXTOOL" quantize "$CLS" -o "$WORK/q.onnx" --mode dynamic --op-types Conv --no-verify --quiet >/dev/null 2>&1 ||
  fail "quantize of cls failed"
"$ONNXTOOL" diff "$CLS" "$WORK/q.onnx" >"$WORK/full.txt" 2>&1
rc_full=$?
# diff exits 1 when the models differ, with nothing on stderr: not a failure's one line.
"$ONNXTOOL" diff "$CLS" "$WORK/q.onnx" --summary >"$WORK/stdout" 2>"$WORK/stderr"
rc_summary=$?
[[ $rc_full -eq 1 && $rc_summary -eq 1 ]] && ok || fail "diff: exit $rc_full, --summary $rc_summary, expected 1 for both"
full_lines=$(wc -l <"$WORK/full.txt")
summary_lines=$(wc -l <"$WORK/stdout")
((full_lines > 100 && summary_lines <= 6)) && ok || fail "diff --summary: $summary_lines lines (the full diff $full_lines): $(cat "$WORK/stdout")"
grep -qE '^nodes [0-9]+ -> [0-9]+: [0-9]+ added \((DynamicQuantizeLinear|MatMulInteger|Cast|Mul|Reshape|Gather|Transpose|Pad|Add) [0-9]+' "$WORK/stdout" &&
  ok || fail "diff --summary: no node line by op type: $(cat "$WORK/stdout")"
grep -qE '^initializers: [0-9]+ added \([0-9.]+ [KM]?B\), [0-9]+ removed \([0-9.]+ [KM]?B\)' "$WORK/stdout" &&
  ok || fail "diff --summary: no initializer line with bytes: $(cat "$WORK/stdout")"
grep -qE '^inputs: .*; outputs: .*; metadata: ' "$WORK/stdout" && grep -q '^opset: ' "$WORK/stdout" &&
  ok || fail "diff --summary: no inputs/outputs/metadata or opset line: $(cat "$WORK/stdout")"
grep -q "differences (nodes " "$WORK/stdout" && ok || fail "diff --summary: no closing count line: $(cat "$WORK/stdout")"
expect_tool "diff --summary of equal models" 0 "equal (nodes" -- diff "$CLS" "$CLS" --summary
"$ONNXTOOL" diff "$CLS" "$WORK/q.onnx" --summary --json >"$WORK/stdout" 2>"$WORK/stderr"
[[ $? -eq 1 ]] && ok || fail "diff --summary --json: not exit 1"
"$PYTHON" - "$WORK/stdout" "$WORK/full.txt" <<'EOF' && ok || fail "diff --summary --json: $(head -c 400 "$WORK/stdout")"
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
assert "differences" not in d and d["equal"] is False
full = [l for l in open(sys.argv[2]) if l.startswith(("node_", "initializer_"))]
added = sum(1 for l in full if l.startswith("node_added "))
assert s["nodes_added"]["count"] == added, (s["nodes_added"]["count"], added)
assert sum(s["nodes_added"]["by_op_type"].values()) == added
# cls holds its weights in Constant nodes: those go, initializers come.
assert s["nodes_removed"]["by_op_type"].get("Constant", 0) > 0
added_init = s["initializers_added"]
assert added_init["count"] > 0 and added_init["bytes_b"] > 0 and added_init["bytes_a"] == 0
assert s["opsets"] and s["opsets"][0]["change"].endswith("-> 11")
assert d["difference_count"] == len(open(sys.argv[2]).read().splitlines()) - 1
EOF

# --- quantize of a float16 model: the weights' "before" figure is their stored bytes.
"$ONNXTOOL" convert "$CLS" --to-fp16 -o "$WORK/cls16.onnx" --quiet >/dev/null 2>&1 || fail "convert --to-fp16 of cls failed"
# Measured on random samples drawn for its float16 input (they once reached the widened model
# as float16: "input 'x' expects element type float, got float16").
expect_tool "quantize a float16 model, measured" 0 "measured on 4 samples" -- \
  quantize "$WORK/cls16.onnx" -o "$OUT/q16.onnx" --mode dynamic --op-types Conv
"$ONNXTOOL" quantize "$CLS" -o "$OUT/q32.onnx" --mode dynamic --op-types Conv --no-verify --json >"$WORK/q32.json" 2>/dev/null
"$ONNXTOOL" quantize "$WORK/cls16.onnx" -o "$OUT/q16.onnx" --mode dynamic --op-types Conv --no-verify --json >"$WORK/q16.json" 2>/dev/null
"$PYTHON" - "$WORK/q32.json" "$WORK/q16.json" <<'EOF' && ok || fail "float16 weights counted as float32: $(head -c 300 "$WORK/q16.json")"
import json, sys
f32 = json.load(open(sys.argv[1]))["weight_bytes"]["float"]
f16 = json.load(open(sys.argv[2]))["weight_bytes"]["float"]
assert f32 > 0 and f16 * 2 == f32, (f32, f16)
EOF
expect_tool "quantize's ratio rounded" 0 "; weights " -- \
  quantize "$WORK/cls16.onnx" -o "$OUT/q16.onnx" --mode dynamic --op-types Conv --no-verify
line=$(grep "; weights " "$WORK/stdout")
[[ $line =~ \(([0-9.]+)x\)$ ]] && ((${#BASH_REMATCH[1]} <= 5)) && ok || fail "ratio not rounded: $line"
# 3 significant digits: "254 KB", "44.1 MB" (not "254.4 KB").
if [[ $line =~ weights\ ([0-9.]+)\ [KMG]?B\ -\>\ ([0-9.]+)\ [KMG]?B ]]; then
  for figure in "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"; do
    digits=${figure//./}
    digits=${digits##+(0)}
    ((${#digits} <= 3)) && ok || fail "size $figure not rounded to 3 digits: $line"
  done
else
  fail "no weight sizes: $line"
fi

# --- run: a float32 .npy for a float16 input is cast, in one line naming the input and types.
"$PYTHON" - "$WORK/x.npy" <<'EOF'
import random, struct, sys
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 48, 96), }"
header += " " * (63 - (10 + len(header)) % 64) + "\n"
n = 3 * 48 * 96
rng = random.Random(0)
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%df" % n, *[rng.uniform(-1, 1) for _ in range(n)]))
EOF
expect_tool "run casts a float32 file to a float16 input" 0 "softmax_0.tmp_0: float16[1,2]" -- \
  run "$WORK/cls16.onnx" --input x="$WORK/x.npy"
grep -q "^onnxtool run: input 'x' cast from float to the model's float16$" "$WORK/stderr" && ok ||
  fail "run: no line naming the cast: $(cat "$WORK/stderr")"
expect_tool "run --quiet casts without the note" 0 "softmax_0.tmp_0" -- run "$WORK/cls16.onnx" --input x="$WORK/x.npy" --quiet
[[ ! -s $WORK/stderr ]] && ok || fail "run --quiet: $(cat "$WORK/stderr")"
finish
