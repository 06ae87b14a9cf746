"""Times onnx.checker.check_model(full_check=True) on one model, for bench/check_speed.sh.

Prints one line: "<load seconds> <check seconds> <peak RSS MB above the post-import baseline>".
Uses only Debian's python3-onnx; run with /usr/bin/python3.
"""
import resource
import sys
import time

import onnx

path = sys.argv[1]
repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 1
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
best_load = best_check = float("inf")
for _ in range(repeat):
    t0 = time.perf_counter()
    model = onnx.load(path)
    t1 = time.perf_counter()
    onnx.checker.check_model(model, full_check=True)
    t2 = time.perf_counter()
    best_load = min(best_load, t1 - t0)
    best_check = min(best_check, t2 - t1)
    del model
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"{best_load:.4f} {best_check:.4f} {(peak - base) / 1024:.1f}")
