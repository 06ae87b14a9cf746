#!/usr/bin/env bash
# Bad inputs to `onnxtool inspect` and `onnxtool convert`: every one must exit 2 with exactly one
# line on stderr naming the file (and the tensor at fault), write no output (not even a temporary
# file) and leave the input byte-identical. Also: converting a model onto itself, a model without
# ir_version, and an output inside a missing directory.
#
# Environment: ONNXTOOL (the binary), ONNXTOOL_CACHE_DIR (real models under models/).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REAL_MODEL=$MODELS/ch_ppocr_mobile_v2.0_cls_infer.onnx
make_work bad_input

# A case this machine cannot set up (not missing data): reported, neither passed nor failed.
skipped=0
skip() {
  skipped=$((skipped + 1))
  echo "SKIP: $*"
}

# check_failure LABEL RC STDERR_FILE OUT_DIR NEEDLE...: exit code 2, one line containing every
# needle, OUT_DIR left empty.
check_failure() {
  local label=$1 rc=$2 err=$3 out_dir=$4
  shift 4
  judge_exit "$label" 2 "$rc" "$err" "$@" || return 1
  if [[ -n $out_dir && -n $(ls -A "$out_dir" 2>/dev/null) ]]; then
    fail "$label: the output directory is not empty: $(ls -A "$out_dir" | tr '\n' ' ')"
    return 1
  fi
}

# bad_input LABEL INPUT HASH_ROOT NEEDLE...: runs inspect and convert on INPUT; both must fail
# cleanly and leave HASH_ROOT (the input and its data files) unchanged. The input path itself is
# always a needle.
bad_input() {
  local label=$1 input=$2 root=$3
  shift 3
  local before after cmd rc out_dir
  before=$(tree_hash "$root")
  for cmd in inspect convert; do
    out_dir=$WORK/out/$label-$cmd
    mkdir -p "$out_dir"
    if [[ $cmd == inspect ]]; then
      "$ONNXTOOL" inspect "$input" >"$WORK/stdout" 2>"$WORK/stderr"
    else
      "$ONNXTOOL" convert "$input" -o "$out_dir/model.onnx" >"$WORK/stdout" 2>"$WORK/stderr"
    fi
    rc=$?
    if check_failure "$label ($cmd)" "$rc" "$WORK/stderr" "$out_dir" "$input" "$@"; then
      after=$(tree_hash "$root")
      if [[ $after != "$before" ]]; then
        fail "$label ($cmd): the input changed"
      else
        ok
      fi
    fi
  done
}

# A fresh directory for one case.
case_dir() {
  mkdir -p "$WORK/cases/$1"
  echo "$WORK/cases/$1"
}

# The parts below that need these are left out when they are missing (and the test is skipped).
has_python onnx numpy || missing_data "$PYTHON with python3-onnx and numpy"
[[ -f $REAL_MODEL ]] || missing_data "$REAL_MODEL"

# Writes the tensor-level bad models with python3-onnx. $1: kind, $2: directory.
make_model() {
  "$PYTHON" - "$1" "$2" <<'EOF'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper

kind, out = sys.argv[1], sys.argv[2]
weights = np.arange(4, dtype=np.float32).reshape(2, 2)

def model(init, ir_version=7):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    node = helper.make_node("Add", ["x", init.name], ["y"], name="add")
    graph = helper.make_graph([node], "g", [x], [y], [init])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = ir_version
    return m

def external(location, offset=0, length=16):
    t = TensorProto()
    t.name = "ext_weight"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([2, 2])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t

def write_weights(path):
    with open(path, "wb") as f:
        f.write(weights.tobytes())

path = os.path.join(out, "model.onnx")
if kind == "raw_mismatch":
    t = TensorProto()
    t.name = "bad_weight"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([2, 2])
    t.raw_data = b"\0" * 12  # dims need 16 bytes
    m = model(t)
elif kind == "absolute":
    write_weights(os.path.join(out, "weights.bin"))
    m = model(external(os.path.abspath(os.path.join(out, "weights.bin"))))
elif kind == "dotdot":
    write_weights(os.path.join(out, "..", "outside.bin"))
    m = model(external("../outside.bin"))
elif kind == "symlink":
    write_weights(os.path.join(out, "weights.bin"))
    os.symlink("weights.bin", os.path.join(out, "link.bin"))
    m = model(external("link.bin"))
elif kind == "hardlink":
    write_weights(os.path.join(out, "weights.bin"))
    os.link(os.path.join(out, "weights.bin"), os.path.join(out, "second_name.bin"))
    m = model(external("weights.bin"))
elif kind == "offset_past_end":
    write_weights(os.path.join(out, "weights.bin"))
    m = model(external("weights.bin", offset=8192))
elif kind == "newline_name":
    t = TensorProto()
    t.name = "bad\nweight"  # a line break inside a name must not break the one-line message
    t.data_type = TensorProto.FLOAT
    t.dims.extend([2, 2])
    t.raw_data = b"\0" * 12
    m = model(t)
elif kind == "valid_external":
    write_weights(os.path.join(out, "weights.bin"))
    m = model(external("weights.bin"))
elif kind == "no_ir_version":
    m = model(helper.make_tensor("w", TensorProto.FLOAT, [2, 2], weights.flatten().tolist()))
    m.ClearField("ir_version")
    assert not m.HasField("ir_version")
else:
    raise SystemExit("unknown kind " + kind)
with open(path, "wb") as f:
    f.write(m.SerializeToString())
EOF
}

# ------------------------------------------------------------------ file-level bad inputs

d=$(case_dir empty)
: >"$d/model.onnx"
bad_input empty "$d/model.onnx" "$d"

# 4 KB of pseudo-random bytes from a fixed-seed LCG (deterministic on every machine).
d=$(case_dir random)
perl -e '$x = 20240611; for (1 .. 4096) { $x = ($x * 1103515245 + 12345) % 2147483648; print chr(($x >> 16) & 255) }' \
  >"$d/model.onnx"
if [[ $(stat -c %s "$d/model.onnx") -ne 4096 ]]; then
  fail "random: could not generate 4096 bytes"
else
  bad_input random "$d/model.onnx" "$d"
fi

if [[ -f $REAL_MODEL ]]; then
  d=$(case_dir truncated)
  size=$(stat -c %s "$REAL_MODEL")
  head -c $((size / 2)) "$REAL_MODEL" >"$d/model.onnx"
  bad_input truncated "$d/model.onnx" "$d"
fi

d=$(case_dir text)
printf 'This is a text file,\nnot an ONNX model.\n' >"$d/model.onnx"
bad_input text "$d/model.onnx" "$d"

d=$(case_dir directory)
mkdir -p "$d/model.onnx"
bad_input directory "$d/model.onnx" "$d"

d=$(case_dir missing)
bad_input missing "$d/model.onnx" "$d"

d=$(case_dir sparse)
if truncate -s 2200M "$d/model.onnx" 2>/dev/null; then
  bad_input sparse_2200M "$d/model.onnx" "$d"
else
  skip "sparse_2200M: the filesystem cannot hold a 2.2 GB sparse file"
fi
rm -f "$d/model.onnx"

d=$(case_dir no_graph)
printf '\x08\x07' >"$d/model.onnx"  # ir_version = 7 and nothing else
bad_input no_graph "$d/model.onnx" "$d"

# ------------------------------------------------------------------ tensor-level bad inputs

if has_python onnx numpy; then
  d=$(case_dir raw_mismatch)
  make_model raw_mismatch "$d" && bad_input raw_mismatch "$d/model.onnx" "$d" bad_weight

  d=$(case_dir absolute)
  make_model absolute "$d" && bad_input external_absolute "$d/model.onnx" "$d" ext_weight

  d=$(case_dir dotdot/model)
  make_model dotdot "$d" && bad_input external_dotdot "$d/model.onnx" "$(dirname "$d")" ext_weight

  d=$(case_dir symlink)
  make_model symlink "$d" && bad_input external_symlink "$d/model.onnx" "$d" ext_weight

  d=$(case_dir hardlink)
  make_model hardlink "$d" && bad_input external_hardlink "$d/model.onnx" "$d" ext_weight

  d=$(case_dir offset_past_end)
  make_model offset_past_end "$d" && bad_input external_offset_past_end "$d/model.onnx" "$d" ext_weight

  d=$(case_dir newline_name)
  make_model newline_name "$d" && bad_input newline_in_tensor_name "$d/model.onnx" "$d" bad

  # The output must not replace one of the input's own files: here its external data file.
  d=$(case_dir onto_external)
  make_model valid_external "$d"
  before=$(tree_hash "$d")
  "$ONNXTOOL" convert "$d/model.onnx" -o "$d/weights.bin" >/dev/null 2>"$WORK/stderr"
  rc=$?
  if check_failure "convert -o INPUT_DATA_FILE" "$rc" "$WORK/stderr" "" "weights.bin"; then
    if [[ $(tree_hash "$d") != "$before" ]]; then
      fail "convert -o INPUT_DATA_FILE: the input's files changed"
    else
      ok
    fi
  elif [[ $(tree_hash "$d") != "$before" ]]; then
    fail "convert -o INPUT_DATA_FILE: the input's external data file was overwritten"
  fi
fi

# ------------------------------------------------------------------ converting onto itself

if [[ -f $REAL_MODEL ]]; then
  d=$(case_dir same_file)
  cp "$REAL_MODEL" "$d/model.onnx"
  before=$(tree_hash "$d")
  for spelling in "$d/model.onnx" "$d/./model.onnx"; do
    "$ONNXTOOL" convert "$d/model.onnx" -o "$spelling" >/dev/null 2>"$WORK/stderr"
    rc=$?
    if check_failure "convert M -o $spelling" "$rc" "$WORK/stderr" "" "model.onnx"; then
      if [[ $(tree_hash "$d") != "$before" || $(ls -A "$d") != model.onnx ]]; then
        fail "convert M -o $spelling: the directory changed"
      else
        ok
      fi
    fi
  done
  if "$ONNXTOOL" convert "$d/model.onnx" -o "$d/model.onnx" --in-place >/dev/null 2>"$WORK/stderr"; then
    if [[ $(ls -A "$d") != model.onnx ]]; then
      fail "convert --in-place: the directory holds $(ls -A "$d" | tr '\n' ' ')"
    elif ! "$ONNXTOOL" inspect "$d/model.onnx" >/dev/null 2>&1; then
      fail "convert --in-place: the result does not load"
    elif has_python onnx numpy && ! "$PYTHON" -c '
import sys, onnx
a, b = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
sys.exit(0 if a == b else 1)' "$REAL_MODEL" "$d/model.onnx"; then
      fail "convert --in-place: the model changed"
    else
      ok
    fi
  else
    fail "convert --in-place exited non-zero: $(head -c 600 "$WORK/stderr")"
  fi
fi

# ------------------------------------------------------------------ a model without ir_version

if has_python onnx numpy; then
  d=$(case_dir no_ir_version)
  make_model no_ir_version "$d"
  if "$ONNXTOOL" inspect "$d/model.onnx" >"$WORK/stdout" 2>"$WORK/stderr"; then
    ok
  else
    fail "no ir_version: inspect failed: $(head -c 600 "$WORK/stderr")"
  fi
fi

# ------------------------------------------------------------------ output in a missing directory

if [[ -f $REAL_MODEL ]]; then
  out=$WORK/no_such_dir/sub/out.onnx
  "$ONNXTOOL" convert "$REAL_MODEL" -o "$out" >/dev/null 2>"$WORK/stderr"
  rc=$?
  if check_failure "output in a missing directory" "$rc" "$WORK/stderr" "" "$out"; then
    if [[ -e $WORK/no_such_dir ]]; then
      fail "output in a missing directory: the directory was created"
    else
      ok
    fi
  fi
fi

echo "$skipped case(s) this machine cannot set up"
finish
