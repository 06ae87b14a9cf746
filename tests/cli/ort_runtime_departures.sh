#!/usr/bin/env bash
# The kept runtime-departure cases (testdata/runtime_departures/, docs/runtime_departures.md) in
# onnxtool and onnxruntime-node, both printed: onnxtool must give numpy's answer, onnxruntime must
# still depart at every optimization level (else the workaround list can shrink, and the test
# says so), and the documented workaround must hold: tests/ort/runtime_departures_vs_ort.py.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_ort
needs_python onnx numpy
exec "$PYTHON" "$SOURCE_DIR/tests/ort/runtime_departures_vs_ort.py" "$ONNXTOOL" "$SOURCE_DIR" "$CACHE_DIR"
