#!/usr/bin/env bash
# The files of one command (ir/command_files.h, ir/output_file.h): a file onnxtool names itself
# (an external data file, a file in --output-dir or --dump-dir) is never written through a
# symlink planted there; no output replaces a file the command reads (a reference output, an
# input tensor, a calibration sample); no two outputs of one command are one file. Each case: the
# exit code, the one line naming the file, and the victim file's bytes untouched.
#
# Environment: ONNXTOOL.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
needs_python onnx numpy
make_work command_files

"$PYTHON" - "$WORK" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
w = numpy_helper.from_array(np.arange(4096, dtype=np.float32).reshape(64, 64) / 4096, "w")
g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
                      "small", [f("x", [1, 64])], [f("y", [1, 64])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/small.onnx")
np.save(f"{d}/x.npy", np.ones((1, 64), np.float32))
EOF
M=$WORK/small.onnx
echo "not to be replaced" >"$WORK/victim.txt"
victim_hash=$(sha256sum <"$WORK/victim.txt")
victim_kept() {  # LABEL: victim.txt still holds its bytes
  [[ $(sha256sum <"$WORK/victim.txt") == "$victim_hash" ]] && ok || fail "$1: victim.txt was overwritten"
}
# same_bytes LABEL FILE HASH
same_bytes() { [[ $(sha256sum <"$2") == "$3" ]] && ok || fail "$1: $2 changed"; }

# --- 1. a symlink at the external data file, to a file in the output folder itself
# ($WORK/out is expect's own folder, emptied before every case: the cases use others.)
mkdir -p "$WORK/dest" "$WORK/dest2" "$WORK/ext"
echo "beside the model" >"$WORK/dest/other.txt"
other_hash=$(sha256sum <"$WORK/dest/other.txt")
ln -s other.txt "$WORK/dest/m.onnx.data"
expect_tool "convert --external-data: a symlink at m.onnx.data" 2 "m.onnx.data (the external data file): is a symlink" -- \
  convert "$M" -o "$WORK/dest/m.onnx" --external-data --size-threshold 0
same_bytes "convert --external-data" "$WORK/dest/other.txt" "$other_hash"
[[ ! -e $WORK/dest/m.onnx ]] && ok || fail "convert wrote dest/m.onnx beside the refused data file"
"$ONNXTOOL" convert "$M" -o "$WORK/ext/m.onnx" --external-data --size-threshold 0 >/dev/null || fail "making ext/m.onnx"
echo "beside the model" >"$WORK/dest2/other.txt"
ln -s other.txt "$WORK/dest2/m.onnx.data"
expect_tool "edit -o: a symlink at the data file" 2 "is a symlink" -- edit "$WORK/ext/m.onnx" -o "$WORK/dest2/m.onnx" --producer-name x
same_bytes "edit -o" "$WORK/dest2/other.txt" "$other_hash"
cp "$M" "$WORK/inplace.onnx"
inplace_hash=$(sha256sum <"$WORK/inplace.onnx")
ln -s victim.txt "$WORK/alias.data"
expect_tool "convert --in-place --data-file through a symlink" 2 "alias.data (the external data file): is a symlink" -- \
  convert "$WORK/inplace.onnx" --in-place --external-data --size-threshold 0 --data-file alias.data
victim_kept "convert --in-place --data-file"
same_bytes "convert --in-place --data-file" "$WORK/inplace.onnx" "$inplace_hash"

# --- 2. files onnxtool names itself in --output-dir and --dump-dir
mkdir -p "$WORK/od" "$WORK/dump1" "$WORK/dump2"
ln -s ../victim.txt "$WORK/od/y.npy"
expect_tool "run --output-dir: a symlink at y.npy" 2 "od/y.npy: is a symlink" -- \
  run "$M" --input "x=$WORK/x.npy" --output-dir "$WORK/od"
victim_kept "run --output-dir"
ln -s ../victim.txt "$WORK/dump1/index.json"
expect_tool "run --dump-dir: a symlink at index.json" 2 "index.json: is a symlink" -- \
  run "$M" --input "x=$WORK/x.npy" --dump-dir "$WORK/dump1"
victim_kept "run --dump-dir index.json"
ln -s ../victim.txt "$WORK/dump2/m.npy"
expect_tool "run --dump-dir: a symlink at a tensor's file" 2 "m.npy: is a symlink" -- \
  run "$M" --input "x=$WORK/x.npy" --dump-dir "$WORK/dump2"
victim_kept "run --dump-dir m.npy"

# --- 4. outputs that would replace the command's own inputs
mkdir -p "$WORK/golden"
"$ONNXTOOL" run "$M" --input "x=$WORK/x.npy" --output-dir "$WORK/golden" >/dev/null || fail "writing the goldens"
golden_hash=$(sha256sum <"$WORK/golden/y.npy")
expect_tool "run --expect D --output-dir D" 2 "is the --expect folder" -- \
  run "$M" --input "x=$WORK/x.npy" --expect "$WORK/golden" --output-dir "$WORK/golden"
same_bytes "run --expect D --output-dir D" "$WORK/golden/y.npy" "$golden_hash"
expect_tool "run --expect D --dump-dir D" 2 "is the --expect folder" -- \
  run "$M" --input "x=$WORK/x.npy" --expect "$WORK/golden" --dump-dir "$WORK/golden"
same_bytes "run --expect D --dump-dir D" "$WORK/golden/y.npy" "$golden_hash"
ln -s golden "$WORK/golden_link"
expect_tool "run --expect D --output-dir (a link to D)" 2 "is the --expect folder" -- \
  run "$M" --input "x=$WORK/x.npy" --expect "$WORK/golden" --output-dir "$WORK/golden_link"
expect_tool "run --output-dir D --dump-dir D" 2 "is the --output-dir folder" -- \
  run "$M" --input "x=$WORK/x.npy" --output-dir "$WORK/od2" --dump-dir "$WORK/od2"
cp "$WORK/x.npy" "$WORK/x_in.npy"
x_hash=$(sha256sum <"$WORK/x_in.npy")
expect_tool "run --profile INPUT" 2 "which this command reads" -- run "$M" --input "x=$WORK/x_in.npy" --profile "$WORK/x_in.npy"
same_bytes "run --profile INPUT" "$WORK/x_in.npy" "$x_hash"
ln -s x_in.npy "$WORK/x_link.npy"
expect_tool "run --profile (a link to an input)" 2 "which this command reads" -- \
  run "$M" --input "x=$WORK/x_in.npy" --profile "$WORK/x_link.npy"
same_bytes "run --profile (a link)" "$WORK/x_in.npy" "$x_hash"
expect_tool "run --profile FILE in --output-dir" 2 "one command writes each file once" -- \
  run "$M" --input "x=$WORK/x.npy" --output-dir "$WORK/od3" --profile "$WORK/od3/y.npy"
[[ ! -e $WORK/od3/y.npy ]] && ok || fail "run --profile FILE in --output-dir: a file was written"
mkdir -p "$WORK/calib/s0"
cp "$WORK/x.npy" "$WORK/calib/s0/x.npy"
calib_hash=$(sha256sum <"$WORK/calib/s0/x.npy")
expect_tool "quantize --report CALIBRATION_SAMPLE" 2 "which this command reads" -- \
  quantize "$M" -o "$WORK/q.onnx" --mode static --inputs "$WORK/calib" --report "$WORK/calib/s0/x.npy"
same_bytes "quantize --report CALIBRATION_SAMPLE" "$WORK/calib/s0/x.npy" "$calib_hash"
[[ ! -e $WORK/q.onnx ]] && ok || fail "quantize --report CALIBRATION_SAMPLE wrote q.onnx"

# --- 5. --report is the output model or its data file
expect_tool "quantize --report = -o" 2 "is the same file as" -- quantize "$M" -o "$WORK/q.onnx" --mode dynamic --report "$WORK/q.onnx"
[[ ! -e $WORK/q.onnx ]] && ok || fail "quantize --report = -o wrote q.onnx"
expect_tool "quantize --report = the data file" 2 "is the same file as" -- \
  quantize "$M" -o "$WORK/q2.onnx" --mode dynamic --report "$WORK/q2.onnx.data"
[[ ! -e $WORK/q2.onnx && ! -e $WORK/q2.onnx.data ]] && ok || fail "quantize --report = the data file wrote something"
# A report that cannot be written stops quantize before the model replaces anything.
echo "earlier" >"$WORK/q3.onnx"
expect_tool "quantize --report in a missing folder" 2 "--report" -- \
  quantize "$M" -o "$WORK/q3.onnx" --mode dynamic --no-verify --report "$WORK/missing/r.json"
[[ $(cat "$WORK/q3.onnx") == earlier ]] && ok || fail "quantize replaced -o although --report failed"

# What still works: an --in-place model keeps replacing its own files; --output-dir beside the input.
cp "$M" "$WORK/again.onnx"
expect_tool "convert --in-place still replaces the input" 0 "wrote" -- \
  convert "$WORK/again.onnx" --in-place --external-data --size-threshold 0
expect_tool "convert --in-place again, with its data file" 0 "wrote" -- convert "$WORK/again.onnx" --in-place --opset 14
expect_tool "check the in-place result" 0 "valid" -- check "$WORK/again.onnx"
expect_tool "run --output-dir and --profile apart" 0 "" -- \
  run "$M" --input "x=$WORK/x.npy" --output-dir "$WORK/od4" --profile "$WORK/trace.json"
[[ -s $WORK/od4/y.npy && -s $WORK/trace.json ]] && ok || fail "run --output-dir with --profile wrote no files"
finish
