# Sourced by every tests/cli/*.sh: where things are, a scratch folder, pass/fail counting, the
# check every failing command must pass (its exit code, one stderr line naming the culprit, no
# output left), and how missing data is reported.
#
# Missing data (models, onnxruntime-node, python3-onnx, the backend suite: what
# testdata/fetch_models.sh installs) makes a test skipped (exit 77, ctest's SKIP_RETURN_CODE),
# never passed; scripts/test.sh fails under CI when anything was skipped.
#
# Environment (ctest sets it, tests/CMakeLists.txt): ONNXTOOL (the binary), ONNXTOOL_SOURCE_DIR,
# ONNXTOOL_CACHE_DIR (models/, ort/), ONNXTOOL_BACKEND_DATA (the ONNX backend suite).
set -u

: "${ONNXTOOL:?set ONNXTOOL to the onnxtool binary}"
SOURCE_DIR=${ONNXTOOL_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CACHE_DIR=${ONNXTOOL_CACHE_DIR:-$SOURCE_DIR/.cache}
export ONNXTOOL_CACHE_DIR=$CACHE_DIR
BACKEND=${ONNXTOOL_BACKEND_DATA:-/usr/share/libonnx-testdata/data}
MODELS=$CACHE_DIR/models
PYTHON=/usr/bin/python3  # Debian's, with python3-onnx, python3-numpy and python3-skimage
ORT_RUN=$SOURCE_DIR/tests/ort/ort_run.js
# 1 when the binary is the AddressSanitizer/UBSan build, where every process starts and runs
# several times slower: the longest tests run a stated sample of their cases there (the Release
# stage runs them all). Exported for the Python judges (tests/ort/).
SANITIZED=0
if ldd "$ONNXTOOL" 2>/dev/null | grep -q libasan; then SANITIZED=1; fi
export ONNXTOOL_SANITIZED=$SANITIZED
# Under the sanitizers registering an onnxtool process's instrumented globals takes 0.1 s of
# CPU of the 0.35 s its start costs (onnxtool --version), over the thousands of processes these
# tests start. Their processes skip it (report_globals=0: no overflow checks
# on global arrays); the library tests (one process) and the fuzz targets keep those checks.
if ((SANITIZED)); then export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}report_globals=0; fi

passed=0
failed=0
data_missing=0

ok() { passed=$((passed + 1)); }
fail() {
  failed=$((failed + 1))
  echo "FAIL: $*"
}

# missing_data WHAT: a part of the test cannot run; the rest goes on.
missing_data() {
  data_missing=$((data_missing + 1))
  echo "ONNXTOOL-SKIP: $* (testdata/fetch_models.sh installs it)"
}

# skip_all WHAT: the whole test cannot run.
skip_all() {
  missing_data "$@"
  exit 77
}

# has_python MODULE...: Debian's python3 imports every module.
has_python() {
  local imports
  imports=$(IFS=,; echo "$*")
  [[ -x $PYTHON ]] && "$PYTHON" -c "import $imports" 2>/dev/null
}

# has_ort: node and onnxruntime-node (testdata/fetch_models.sh installs it under $CACHE_DIR/ort).
has_ort() {
  command -v node >/dev/null 2>&1 && [[ -f $CACHE_DIR/ort/node_modules/onnxruntime-node/package.json ]]
}

# needs_python MODULE... / needs_ort / needs_file PATH...: skips the whole test when missing.
needs_python() { has_python "$@" || skip_all "$PYTHON with python3 modules: $*"; }
needs_ort() { has_ort || skip_all "node and onnxruntime-node in $CACHE_DIR/ort"; }
needs_file() {
  local f
  for f in "$@"; do [[ -e $f ]] || skip_all "$f"; done
}

# make_work NAME: a scratch folder in $WORK (removed on exit, with whatever `at_exit` adds), and
# $OUT, the folder outputs go to (emptied before each `expect`).
at_exit_commands=()
at_exit() { at_exit_commands+=("$*"); }
run_at_exit() {
  local c
  for c in "${at_exit_commands[@]}"; do eval "$c"; done
  rm -rf "$WORK"
}
make_work() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool_$1.XXXXXX")
  OUT=$WORK/out
  mkdir -p "$OUT"
  trap run_at_exit EXIT
}

# judge_exit LABEL CODES RC ERR NEEDLE...: RC is one of CODES ("0", "1 2"); when RC is not 0, ERR
# (the stderr file) holds exactly one line besides progress lines ("onnxtool CMD: progress: ...",
# which long work prints before it fails), containing every NEEDLE. Records a failure and returns
# 1 when not; records nothing and returns 0 when so.
judge_exit() {
  local label=$1 codes=$2 rc=$3 err=$4
  shift 4
  if [[ " $codes " != *" $rc "* ]]; then
    fail "$label: exit $rc, expected $codes: $(head -c 400 "$err")"
    return 1
  fi
  [[ $rc -eq 0 ]] && return 0
  local lines needle
  lines=$(grep -vc '^onnxtool [a-z]*: progress: ' "$err")
  if [[ $lines -ne 1 ]]; then
    fail "$label: $lines lines on stderr, expected 1: $(head -c 400 "$err")"
    return 1
  fi
  for needle in "$@"; do
    if ! grep -qF -- "$needle" "$err"; then
      fail "$label: stderr does not name '$needle': $(head -c 400 "$err")"
      return 1
    fi
  done
}

# expect LABEL CODES NEEDLE -- COMMAND...: runs COMMAND (stdout and stderr in $WORK/stdout and
# $WORK/stderr) with $OUT emptied first. It must exit with one of CODES. A failure prints one
# stderr line containing NEEDLE and leaves $OUT empty; a success prints NEEDLE on stdout or
# stderr. An empty NEEDLE matches anything. EXPECT_TIMEOUT (seconds) bounds COMMAND when set.
# expect_tool: the same with "$ONNXTOOL" before the arguments.
EXPECT_TIMEOUT=${EXPECT_TIMEOUT:-}
expect() {
  local label=$1 codes=$2 needle=$3
  shift 4
  rm -rf "$OUT" && mkdir -p "$OUT"
  if [[ -n $EXPECT_TIMEOUT ]]; then
    timeout "$EXPECT_TIMEOUT" "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  else
    "$@" >"$WORK/stdout" 2>"$WORK/stderr"
  fi
  local rc=$?
  judge_exit "$label" "$codes" "$rc" "$WORK/stderr" "$needle" || return 0
  if [[ $rc -ne 0 && -n $(ls -A "$OUT") ]]; then
    fail "$label: output left behind: $(ls -A "$OUT" | tr '\n' ' ')"
  elif [[ $rc -eq 0 ]] && ! grep -qF -- "$needle" "$WORK/stdout" "$WORK/stderr"; then
    fail "$label: the output lacks '$needle': $(head -c 300 "$WORK/stdout") $(head -c 300 "$WORK/stderr")"
  else
    ok
  fi
}
expect_tool() {
  local label=$1 codes=$2 needle=$3
  shift 4
  expect "$label" "$codes" "$needle" -- "$ONNXTOOL" "$@"
}

# tiny_cnn_samples DIR [N]: N (default 2) sample folders DIR/s0, DIR/s1... each holding
# image.npy, float32 [1,3,32,32] of smooth values (sample k shifted by k): inputs for
# testdata/tiny_cnn.onnx, written without numpy.
tiny_cnn_samples() {
  "$PYTHON" - "$1" "${2:-2}" <<'EOF'
import math, os, struct, sys
for s in range(int(sys.argv[2])):
    d = os.path.join(sys.argv[1], "s%d" % s)
    os.makedirs(d)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 32, 32), }"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(os.path.join(d, "image.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<3072f", *[math.sin(0.05 * i + s) for i in range(3072)]))
EOF
}

# tree_hash DIR: a fingerprint of everything under DIR: names, types, modes, link targets,
# hard-link counts, sizes and the sha256 of every regular file.
tree_hash() {
  (
    cd "$1" || exit 1
    find . -printf '%p %y %m %l %n %s\n' | LC_ALL=C sort
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
  ) | sha256sum | cut -d' ' -f1
}

# judged STATUS: the exit status of a sub-test (a tests/ort/*.py judge): 0 passed, 77 skipped for
# missing data (noted here too; returns 0), else failed (returns 1).
judged() {
  case $1 in
    0) return 0 ;;
    77) data_missing=$((data_missing + 1)); return 0 ;;
    *) return 1 ;;
  esac
}

# finish: prints the counts and exits 1 when anything failed, else 77 when data was missing,
# else 0.
finish() {  # any argument is ignored: the count is $failed
  echo "$passed passed, $failed failed"
  if [[ $failed -ne 0 ]]; then exit 1; fi
  if [[ $data_missing -ne 0 ]]; then exit 77; fi
  exit 0
}
