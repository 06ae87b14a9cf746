#!/usr/bin/env bash
# Models as onnxruntime saves them optimized: onnxtool check, run and compare on each (issue 44's
# figures; not a ctest entry). For every model of the runner benchmark set (testdata/models.sha256
# and bench/models.sha256, with bench/make_bench_inputs.py's input set) and each of onnxruntime's
# levels extended and all (the level that also rewrites convolutions into its NCHWc layout), the
# model is saved by onnxruntime-node (optimizedModelFilePath), then:
#   - check: onnxtool check's errors and warnings on the saved model;
#   - run: onnxtool's outputs of the saved model against onnxruntime's outputs of the same saved
#     model on the same inputs: the worst cosine and the largest |ours - ort| / (atol + rtol |ort|)
#     over the outputs (rtol 1e-3, atol 1e-5 * max(1, max |ort|), as tests/cli/ort_crosscheck.sh);
#   - compare: `onnxtool compare ORIGINAL SAVED` (both on onnxtool's runner, default tolerances):
#     did onnxruntime's rewrite change the results?
# Prints a markdown table and the counts; the com.microsoft ops each saved model uses are listed.
#
#   bench/ort_optimized.sh [LEVELS]      (default "extended all")
#
# Environment: ONNXTOOL_BUILD_DIR, ONNXTOOL_CACHE_DIR. Exit status: 0 when every row passed all
# three, 1 otherwise, 2 when nothing could run.
set -uo pipefail
LEVELS=${1:-extended all}
RUNS=1
BENCH=ort_optimized.sh
source "$(dirname "${BASH_SOURCE[0]}")/ort_setup.sh"
"$ROOT/testdata/fetch_models.sh" --manifest "$ROOT/bench/models.sha256" >/dev/null || die "fetching bench/models.sha256 failed"
INPUTS_DIR=$("$PYTHON" "$ROOT/bench/make_bench_inputs.py" "$CACHE_DIR") || die "bench/make_bench_inputs.py failed"

PYTHONPATH=$ROOT/bench${PYTHONPATH:+:$PYTHONPATH} "$PYTHON" - "$ONNXTOOL" "$ORT_RUN" "$CACHE_DIR" "$INPUTS_DIR" "$TMP" "$LEVELS" <<'EOF'
import json, os, subprocess, sys
import numpy as np

import bench_models

onnxtool, ort_run, cache, inputs_dir, tmp, levels = sys.argv[1:7]
env = dict(os.environ, NODE_PATH=os.path.join(cache, "ort", "node_modules"))
rows, bad = [], 0
for short, path, feeds in bench_models.models(cache, inputs_dir):
    for level in levels.split():
        work = os.path.join(tmp, short + "." + level)
        os.makedirs(work)
        saved = os.path.join(work, "saved.onnx")
        r = subprocess.run(["node", ort_run, path, "--level", level, "--optimized-model", saved], env=env,
                           capture_output=True, text=True)
        if r.returncode or not os.path.exists(saved):
            rows.append((short, level, "", "onnxruntime could not save it", "", ""))
            bad += 1
            continue
        listed = subprocess.run([onnxtool, "inspect", saved, "--json"], capture_output=True, text=True)
        ops = sorted({k for k in json.loads(listed.stdout).get("op_counts", {}) if "::" in k} if listed.returncode == 0 else [])
        c = subprocess.run([onnxtool, "check", saved, "--json"], capture_output=True, text=True)
        try:
            doc = json.loads(c.stdout)
            errors, warnings = doc["error_count"], doc["warning_count"]
            check = "%d errors, %d warnings" % (errors, warnings)
        except (ValueError, KeyError):
            errors, check = 1, "check failed: " + c.stderr.strip()[:80]
        ours = subprocess.run([onnxtool, "run", saved, *feeds, "--output-dir", work + "/ours", "--quiet"],
                              capture_output=True, text=True)
        theirs = subprocess.run(["node", ort_run, saved, *feeds, "--output-dir", work + "/ort"], env=env,
                                capture_output=True, text=True)
        if ours.returncode:
            run = "onnxtool: " + ours.stderr.strip().split("\n")[-1][:90]
            run_ok = False
        elif theirs.returncode:
            run = "onnxruntime: " + theirs.stderr.strip().split("\n")[-1][:90]
            run_ok = False
        else:
            worst, cos = 0.0, 1.0
            for f in sorted(os.listdir(work + "/ort")):
                a = np.load(os.path.join(work, "ours", f)).astype(np.float64)
                b = np.load(os.path.join(work, "ort", f)).astype(np.float64)
                if a.shape != b.shape:
                    worst = float("inf")
                    continue
                if a.size == 0:
                    continue
                if b.dtype.kind in "iub":
                    worst = max(worst, 0.0 if np.array_equal(a, b) else float("inf"))
                    continue
                atol = 1e-5 * max(1.0, float(np.nanmax(np.abs(b))))
                worst = max(worst, float(np.nanmax(np.abs(a - b) / (atol + 1e-3 * np.abs(b)))))
                n = np.linalg.norm(a) * np.linalg.norm(b)
                cos = min(cos, float((a * b).sum() / n) if n else 1.0)
            run_ok = worst <= 1.0
            run = "cosine %.6f, %.3g of tolerance" % (cos, worst)
        cmp = subprocess.run([onnxtool, "compare", path, saved, *feeds, "--quiet"], capture_output=True, text=True)
        compare = "passes" if cmp.returncode == 0 else ("differs" if cmp.returncode == 1 else
                                                          "error: " + cmp.stderr.strip().split("\n")[-1][:80])
        ok = errors == 0 and run_ok and cmp.returncode == 0
        bad += 0 if ok else 1
        rows.append((short, level, ", ".join(o.replace("com.microsoft", "ms") for o in ops), check, run, compare))
        print("%s %s: %s; run %s; compare %s" % (short, level, check, run, compare), file=sys.stderr)

print("| model | level | non-ONNX ops | check | run vs onnxruntime (same saved model) | compare original vs saved |")
print("|---|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
print()
print("%d of %d saved models pass all three" % (len(rows) - bad, len(rows)))
sys.exit(1 if bad else 0)
EOF
