#!/usr/bin/env bash
# docs/json.md against the commands: each fenced `keys ID` block of the doc lists the keys of one
# --json document (PATH TYPE meaning); every command below runs on testdata/tiny_cnn.onnx and
# its document must hold every key listed, with one of the listed types, and no top-level key the
# doc leaves out. The doc's blocks and this script's commands must name the same IDs, so that
# neither can drift from the other.
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_SOURCE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ -x $PYTHON ]] || skip_all "$PYTHON"
make_work json_keys
M=$SOURCE_DIR/testdata/tiny_cnn.onnx
DOC=$SOURCE_DIR/docs/json.md

# Two calibration / comparison samples of tiny_cnn's input image[1,3,32,32] (float32 .npy,
# written without numpy).
"$PYTHON" - "$WORK/samples" <<'EOF'
import os, random, struct, sys
for s in range(2):
    d = os.path.join(sys.argv[1], "s%d" % s)
    os.makedirs(d)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 32, 32), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    rng = random.Random(s)
    with open(os.path.join(d, "image.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<3072f", *[rng.uniform(-1, 1) for _ in range(3072)]))
EOF
"$ONNXTOOL" optimize "$M" -o "$WORK/opt.onnx" >/dev/null 2>&1 || fail "optimize of tiny_cnn failed"

# ID -> command line (after the binary); exit code 2 for the failure document, else 0.
declare -A COMMANDS=(
  [error]="inspect $WORK/missing.onnx --json"
  [inspect]="inspect $M --json --nodes --initializers --cost --graph $WORK/graph.dot"
  [check]="check $M --json"
  [check-models]="check $M $M --json"
  [optimize]="optimize $M -o $OUT/o.onnx --json"
  [optimize-list-passes]="optimize --list-passes --json"
  [convert]="convert $M -o $OUT/c.onnx --to-fp16 --json"
  [quantize]="quantize $M -o $OUT/q.onnx --mode static --inputs $WORK/samples --op-types Conv --json"
  [run]="run $M --random --output-dir $OUT/run --dump-dir $OUT/dump --benchmark 2 --profile --json"
  [compare]="compare $M $WORK/opt.onnx --inputs $WORK/samples --per-layer --min-cosine 0.99 --json"
  [diff]="diff $M $WORK/opt.onnx --json"
  [diff-summary]="diff $M $WORK/opt.onnx --summary --json"
  [devices]="devices --json"
  [extract]="extract $M -o $OUT/e.onnx --from relu1_out --to logits --json"
  [edit]="edit $M -o $OUT/m.onnx --rename-input image=pixels --set-metadata k=v --json"
  [reduce]="reduce $M -o $OUT/r.onnx --command false --json"
)

ids=$("$PYTHON" -c '
import re, sys
print(" ".join(re.findall(r"^```keys (\S+)$", open(sys.argv[1]).read(), re.M)))' "$DOC")
for id in $ids; do [[ -n ${COMMANDS[$id]+x} ]] || fail "docs/json.md has a keys block '$id' that this test does not run"; done
for id in "${!COMMANDS[@]}"; do [[ " $ids " == *" $id "* ]] || fail "docs/json.md has no keys block for '$id'"; done

for id in $ids; do
  [[ -n ${COMMANDS[$id]+x} ]] || continue
  code=0
  [[ $id == error ]] && code=2
  # shellcheck disable=SC2086  # the command lines hold no spaces inside an argument
  expect_tool "$id --json" "$code" "" -- ${COMMANDS[$id]}
  "$PYTHON" - "$DOC" "$id" "$WORK/stdout" <<'EOF' && ok || fail "$id --json does not match docs/json.md"
import json, re, sys
doc, block_id, out = sys.argv[1:]
block = re.search(r"^```keys " + re.escape(block_id) + r"\n(.*?)^```", open(doc).read(), re.M | re.S).group(1)
data = json.load(open(out))
kinds = {"string": str, "array": list, "object": dict, "bool": bool}
def has_type(v, t):
    if t == "null": return v is None
    if t == "int": return isinstance(v, int) and not isinstance(v, bool)
    if t == "number": return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, kinds[t])
def values(node, parts):
    """Every value at the path (x[] descends into each element); parents that are null or
    empty arrays hold nothing to check."""
    if not parts: return [node]
    key, rest = parts[0], parts[1:]
    many = key.endswith("[]")
    key = key[:-2] if many else key
    if node is None: return []
    if not isinstance(node, dict) or key not in node: return [KeyError(key)]
    v = node[key]
    if many and not rest: return [v]
    if many: return [x for item in (v or []) for x in values(item, rest)]
    return values(v, rest)
problems, documented = [], set()
for line in block.splitlines():
    if not line.strip(): continue
    path, types = line.split()[:2]
    documented.add(path.split(".")[0].rstrip("[]"))
    for v in values(data, path.split(".")):
        if isinstance(v, KeyError): problems.append(path + ": missing")
        elif not any(has_type(v, t) for t in types.split("|")): problems.append(f"{path}: {type(v).__name__}, documented {types}")
problems += [k + ": not documented" for k in data if k not in documented]
if problems:
    print("; ".join(problems))
    sys.exit(1)
EOF
done
finish
