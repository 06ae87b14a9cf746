#!/usr/bin/env bash
# onnxruntime's channel-blocked ops (com.microsoft.nchwc, ir/ops/nchwc_schemas.def) in onnxtool.
#
# 1. Small generated networks (tests/ort/nchwc_vs_ort.py): onnxruntime's "all" level rewrites
#    each into blocked ops (ReorderInput/Output, Conv in its three weight formats with Sum and
#    every fused activation, the pools, Upsample); onnxtool checks the blocked model clean and
#    runs it like the plain network and like onnxruntime; a block-size-8 model written by hand
#    runs with its block size read from its shapes; contradicting shapes are refused.
# 2. The real models of $ONNXTOOL_CACHE_DIR/models, each saved by onnxruntime-node optimized at
#    its "all" level (what onnxruntime writes for users who save optimized models): `onnxtool
#    check` reports 0 errors, and tests/cli/ort_crosscheck.sh runs them in both on the real
#    inputs (tests/make_real_inputs.py) with its tolerance (rtol 1e-3, atol 1e-5 x max(1,
#    max|ort|)). The same copies use com.microsoft ops (FusedConv, QuickGelu, FusedMatMul) and
#    LayerNormalization below opset 17 too: all run here.
#
# Skipped (exit 77) without node and onnxruntime-node or python3-onnx; part 2 without the
# real models or the tools that make their inputs.
#
# Environment: ONNXTOOL, ONNXTOOL_SOURCE_DIR, ONNXTOOL_CACHE_DIR.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_ort
needs_python numpy onnx
make_work nchwc

"$PYTHON" "$SOURCE_DIR/tests/ort/nchwc_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR" >"$WORK/small.log" 2>&1
if judged $?; then ok; else fail "generated networks against plain ops and onnxruntime:"; fi
cat "$WORK/small.log"

if [[ ! -d $MODELS ]]; then
  missing_data "the real models in $MODELS"
  finish
fi
if ! has_python skimage scipy || ! command -v espeak-ng >/dev/null 2>&1; then
  missing_data "python3-skimage, python3-scipy and espeak-ng (the real inputs)"
  finish
fi
inputs_dir=$("$PYTHON" "$SOURCE_DIR/tests/make_real_inputs.py" "$CACHE_DIR") || {
  fail "tests/make_real_inputs.py could not write the real inputs"
  finish
}

# The optimized copies, and a manifest of their real input sets.
mkdir -p "$WORK/opt"
"$PYTHON" - "$inputs_dir/manifest.tsv" "$MODELS" "$WORK" "$ORT_RUN" <<'PY' >"$WORK/plan.log" 2>&1
import collections, json, os, subprocess, sys
import onnx
manifest, models, work, ort_run = sys.argv[1:]
inputs_dir = os.path.dirname(manifest)
sets = collections.OrderedDict()
for line in open(manifest):
    if not line.strip() or line.startswith("#"):
        continue
    model, name, files = line.rstrip("\n").split("\t")
    sets.setdefault(model, []).append((name, files))
jobs = [{"model": os.path.join(models, m), "optimized_model": os.path.join(work, "opt", m[:-5] + ".all.onnx")} for m in sets]
with open(os.path.join(work, "optimize.json"), "w") as f:
    json.dump(jobs, f)
r = subprocess.run(["node", ort_run, "--batch", os.path.join(work, "optimize.json"), "--level", "all"], capture_output=True, text=True)
results = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
with open(os.path.join(work, "manifest.tsv"), "w") as out, open(os.path.join(work, "check.txt"), "w") as check:
    for job, res in zip(jobs, results):
        label = os.path.basename(job["optimized_model"])
        if not res["ok"]:
            print(f"FAIL {label}: onnxruntime could not save it: {res['error']}")
            continue
        m = onnx.load(job["optimized_model"], load_external_data=False)
        def nodes(g):  # with those of subgraphs (If branches, Loop bodies)
            for n in g.node:
                yield n
                for a in n.attribute:
                    for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                        yield from nodes(sub)
        ops = collections.Counter((n.domain or "ai.onnx", n.op_type) for n in nodes(m.graph))
        nchwc = sum(c for (d, _), c in ops.items() if d == "com.microsoft.nchwc")
        contrib = sum(c for (d, _), c in ops.items() if d == "com.microsoft")
        print(f"RUN {label}: {nchwc} nchwc nodes, {contrib} com.microsoft nodes")
        check.write(job["optimized_model"] + "\n")
        m_rel = os.path.relpath(job["model"], models)
        for name, files in sets[m_rel]:
            abs_files = " ".join(f"{kv.split('=', 1)[0]}={os.path.join(inputs_dir, kv.split('=', 1)[1])}" for kv in files.split())
            out.write(f"{job['optimized_model']}\t{name}\t{abs_files}\n")
PY
status=$?
cat "$WORK/plan.log"
[[ $status -eq 0 ]] || fail "could not make the optimized copies"
grep -q '^FAIL' "$WORK/plan.log" && fail "onnxruntime could not optimize a real model"
while read -r model; do
  [[ -z $model ]] && continue
  if "$ONNXTOOL" check "$model" >"$WORK/check.out" 2>&1 && grep -q '(0 errors' "$WORK/check.out"; then
    echo "PASS check $(basename "$model"): $(grep -o '[0-9]* errors*, [0-9]* warnings*' "$WORK/check.out" | head -n 1)"
    ok
  else
    fail "onnxtool check $(basename "$model"): $(head -c 400 "$WORK/check.out")"
  fi
done <"$WORK/check.txt"
if [[ -s $WORK/manifest.tsv ]]; then
  if CROSSCHECK_MANIFEST=$WORK/manifest.tsv bash "$SOURCE_DIR/tests/cli/ort_crosscheck.sh" >"$WORK/cross.log" 2>&1; then ok; else fail "optimized real models against onnxruntime:"; fi
  grep -v '^[0-9]* passed' "$WORK/cross.log"
fi
finish
