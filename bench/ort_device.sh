#!/usr/bin/env bash
# onnxruntime as a device: `onnxtool compare MODEL --device-a cpu --device-b onnxruntime:LEVEL` on
# every model of the runner benchmark set (testdata/models.sha256 and bench/models.sha256, with
# bench/make_bench_inputs.py's real inputs), at each of onnxruntime's levels (issue 44's figures;
# not a ctest entry). Per model and level: compare's verdict at its default tolerances (rtol
# 1e-3, atol 1e-5 per element), the lowest cosine over the outputs, and for a departure the first
# output named. Prints a markdown table and the count that agree.
#
#   bench/ort_device.sh [LEVELS]      (default "disabled basic extended all")
#
# Environment: ONNXTOOL_BUILD_DIR, ONNXTOOL_CACHE_DIR. Exit status: 0 when every row agreed, 1
# otherwise, 2 when nothing could run.
set -uo pipefail
LEVELS=${1:-disabled basic extended all}
RUNS=1
BENCH=ort_device.sh
source "$(dirname "${BASH_SOURCE[0]}")/ort_setup.sh"
"$ROOT/testdata/fetch_models.sh" --manifest "$ROOT/bench/models.sha256" >/dev/null || die "fetching bench/models.sha256 failed"
INPUTS_DIR=$("$PYTHON" "$ROOT/bench/make_bench_inputs.py" "$CACHE_DIR") || die "bench/make_bench_inputs.py failed"
# onnxtool finds the library of onnxruntime-node under NODE_PATH.
export NODE_PATH=$CACHE_DIR/ort/node_modules

PYTHONPATH=$ROOT/bench${PYTHONPATH:+:$PYTHONPATH} "$PYTHON" - "$ONNXTOOL" "$CACHE_DIR" "$INPUTS_DIR" "$LEVELS" <<'EOF'
import re, subprocess, sys

import bench_models

onnxtool, cache, inputs_dir, levels = sys.argv[1:5]
rows, bad = [], 0
for short, path, feeds in bench_models.models(cache, inputs_dir):
    for level in levels.split():
        r = subprocess.run([onnxtool, "compare", path, *feeds, "--device-a", "cpu", "--device-b", "onnxruntime:" + level],
                           capture_output=True, text=True)
        text = r.stdout + r.stderr
        cosines = [float(c) for c in re.findall(r"cosine (-?[0-9][0-9.eE+-]*)", text)]
        low = min(cosines) if cosines else float("nan")
        if r.returncode == 0:
            verdict = "agrees"
        elif r.returncode == 1:
            first = next((l for l in text.splitlines() if "beyond tolerance" in l), text.strip().splitlines()[-1])
            verdict = "departs: " + first.strip()[:110]
        else:
            verdict = "error: " + text.strip().splitlines()[-1][:110]
        bad += r.returncode != 0
        rows.append((short, level, "%.6f" % low, verdict))
        print("%s %s: %s" % (short, level, verdict), file=sys.stderr)

print("| model | onnxruntime level | lowest output cosine | compare --device-a cpu --device-b onnxruntime |")
print("|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
print()
print("%d of %d model/level pairs agree" % (len(rows) - bad, len(rows)))
sys.exit(1 if bad else 0 if rows else 2)
EOF
