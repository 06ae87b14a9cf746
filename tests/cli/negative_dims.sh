#!/usr/bin/env bash
# Older exporters (Paddle2ONNX among them) declare free dimensions as dim_value -1. onnxruntime
# reads them as free; so does onnxtool: `check` warns (an error with --strict), `run` takes any
# size there, `optimize` folds nothing from them and saves the -1 as written, and `inspect`
# shows it. Built from testdata/tiny_cnn.onnx with python3-onnx.
#
# Environment: ONNXTOOL (the binary); python3 with onnx and numpy.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_work negative_dims
needs_python onnx numpy

"$PYTHON" - "$SOURCE_DIR/testdata/tiny_cnn.onnx" "$WORK/neg.onnx" "$WORK/x.npy" <<'EOF'
import sys
import numpy as np
import onnx
m = onnx.load(sys.argv[1])
dims = m.graph.input[0].type.tensor_type.shape.dim
dims[0].Clear()
dims[0].dim_value = -1
onnx.save(m, sys.argv[2])
shape = [3] + [d.dim_value for d in list(dims)[1:]]
np.save(sys.argv[3], np.random.default_rng(1).uniform(0, 1, shape).astype(np.float32))
EOF
IN=$("$PYTHON" -c 'import onnx,sys; print(onnx.load(sys.argv[1]).graph.input[0].name)' "$WORK/neg.onnx")
before=$(sha256sum <"$WORK/neg.onnx")

expect_tool "check warns" 0 "value.negative-dim" -- check "$WORK/neg.onnx"
# check reports on stdout; with --strict the warning is an error (exit 1).
"$ONNXTOOL" check "$WORK/neg.onnx" --strict >"$WORK/stdout" 2>&1
rc=$?
[[ $rc -eq 1 ]] && grep -q "error value.negative-dim" "$WORK/stdout" && ok || fail "check --strict: exit $rc: $(cat "$WORK/stdout")"
expect_tool "run with a batch of 3" 0 "probs: float[3,10]" -- run "$WORK/neg.onnx" --input "$IN=$WORK/x.npy"
expect_tool "run --random" 0 "probs: float[1,10]" -- run "$WORK/neg.onnx" --random
expect_tool "inspect shows the -1" 0 "[-1," -- inspect "$WORK/neg.onnx"
expect_tool "optimize" 0 "" -- optimize "$WORK/neg.onnx" -o "$WORK/opt.onnx"
kept=$("$PYTHON" -c 'import onnx,sys; print(onnx.load(sys.argv[1]).graph.input[0].type.tensor_type.shape.dim[0].dim_value)' "$WORK/opt.onnx")
[[ $kept == -1 ]] && ok || fail "optimize saved dim 0 as '$kept', not -1"
expect_tool "optimized model, batch of 3, same outputs" 0 "within tolerance" -- \
  compare "$WORK/neg.onnx" "$WORK/opt.onnx" --input "$IN=$WORK/x.npy"
[[ $(sha256sum <"$WORK/neg.onnx") == "$before" ]] && ok || fail "the input model was changed"
finish
