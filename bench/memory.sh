#!/usr/bin/env bash
# Peak memory of onnxtool while it inspects and converts models, as a markdown table.
#
#   bench/memory.sh
#
# Measures `onnxtool inspect`, `onnxtool convert`, `onnxtool optimize` and (on the large models) `onnxtool convert
# --external-data` with /usr/bin/time -v, on synthetic MLP models written by make_large_model
# (~100 and ~400 MiB by default) and on the real models in .cache/models/*.onnx when present.
# The requirement it reports on: inspecting a large model peaks at no more than 1.3x its file size.
#
# Besides the plain models (a few 4 MiB weights in raw_data, the layout exporters usually write),
# two harder layouts of the same size show where the limit is: weights in the typed float_data
# field, and many small (16 KiB) weights, i.e. many nodes and initializers per MiB.
#
# Environment:
#   ONNXTOOL_BUILD_DIR  build directory (default: build/), built with scripts/build.sh when it
#                       exists, else (or when that fails) with cmake + ninja
#   ONNXTOOL_CMAKE_ARGS extra arguments for cmake when the build directory is configured here
#   BENCH_SIZES         sizes of the synthetic models in MiB (default: "100 400")
#   BENCH_VARIANT_MB    size of the float_data and small-weights models in MiB (default 100;
#                       0 leaves them out)
#   TMPDIR              where the temporary models go (removed at exit)
#
# Exit status: 0 when every measured command succeeded, 1 otherwise, 2 when nothing could be run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${ONNXTOOL_BUILD_DIR:-$ROOT/build}
case $BUILD_DIR in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
SIZES=${BENCH_SIZES:-100 400}
VARIANT_MB=${BENCH_VARIANT_MB:-100}
LIMIT=1.3  # the inspect requirement, peak RSS / file size

say() { echo "memory.sh: $*" >&2; }
die() { say "$*"; exit 2; }

# ------------------------------------------------------------------ tools
if [[ ! -x /usr/bin/time ]]; then
  [[ $(id -u) -eq 0 ]] || die "/usr/bin/time is missing; install the 'time' package (apt-get install time)"
  say "installing GNU time"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >/dev/null; then
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >/dev/null
  fi
  [[ -x /usr/bin/time ]] || die "could not install /usr/bin/time"
fi

# ------------------------------------------------------------------ build
TMP=$(mktemp -d "${TMPDIR:-/tmp}/onnxtool-memory.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

# quiet_build WHAT COMMAND...: runs a build step, showing its output only when it fails.
quiet_build() {
  local what=$1
  shift
  say "$what"
  "$@" >"$TMP/build.log" 2>&1 || { cat "$TMP/build.log" >&2; die "$what failed"; }
}

# scripts/build.sh (when there) installs what is missing and builds everything; if it fails (say,
# a test target that does not build right now), building onnxtool alone is enough here.
built=0
if [[ -x $ROOT/scripts/build.sh ]]; then
  say "building with scripts/build.sh --build-dir $BUILD_DIR"
  if "$ROOT/scripts/build.sh" --build-dir "$BUILD_DIR" >"$TMP/build.log" 2>&1; then
    built=1
  else
    tail -n 5 "$TMP/build.log" >&2
    say "scripts/build.sh failed; building the onnxtool target only"
  fi
fi
if [[ $built -eq 0 && ! -f $BUILD_DIR/CMakeCache.txt ]]; then
  # shellcheck disable=SC2086  # ONNXTOOL_CMAKE_ARGS is a list of arguments
  quiet_build "configuring $BUILD_DIR" \
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${ONNXTOOL_CMAKE_ARGS:-}
fi
quiet_build "building onnxtool in $BUILD_DIR" cmake --build "$BUILD_DIR" --target onnxtool
ONNXTOOL=$BUILD_DIR/onnxtool
[[ -x $ONNXTOOL ]] || die "$ONNXTOOL was not built"

# make_large_model is a target once the root CMakeLists.txt has add_subdirectory(bench); before
# that, compile it here against the IR library of the same build.
say "building make_large_model"
if cmake --build "$BUILD_DIR" --target make_large_model >"$TMP/build.log" 2>&1 &&
  [[ -x $BUILD_DIR/make_large_model ]]; then
  MAKE_MODEL=$BUILD_DIR/make_large_model
else
  say "no make_large_model target in $BUILD_DIR; compiling it against onnxtool_ir"
  quiet_build "building onnxtool_ir" cmake --build "$BUILD_DIR" --target onnxtool_ir
  IR_LIB=$(find "$BUILD_DIR" -name libonnxtool_ir.a -print -quit)
  [[ -n $IR_LIB ]] || die "libonnxtool_ir.a not found in $BUILD_DIR"
  quiet_build "compiling make_large_model" "${CXX:-c++}" -std=c++17 -O2 -I "$ROOT" \
    "$ROOT/bench/make_large_model.cpp" "$IR_LIB" -o "$TMP/make_large_model"
  MAKE_MODEL=$TMP/make_large_model
fi

# ------------------------------------------------------------------ measuring
ROWS=()
FAILED=0
PEAK_KB=0
WALL_S=0

# run_timed ARGS...: runs onnxtool ARGS under /usr/bin/time -v; sets PEAK_KB, WALL_S, STATUS.
run_timed() {
  STATUS=0
  /usr/bin/time -v -o "$TMP/time.txt" "$ONNXTOOL" "$@" >"$TMP/stdout.txt" 2>"$TMP/stderr.txt" || STATUS=$?
  PEAK_KB=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$TMP/time.txt")
  # "Elapsed (wall clock) time (h:mm:ss or m:ss): 0:01.23"
  WALL_S=$(awk '/Elapsed \(wall clock\)/ {
      n = split($NF, p, ":"); s = 0
      for (i = 1; i <= n; i++) s = s * 60 + p[i]
      printf "%.2f", s }' "$TMP/time.txt")
  [[ -n $PEAK_KB && -n $WALL_S ]] || die "could not read /usr/bin/time's report: $(cat "$TMP/time.txt")"
}

file_bytes() { local total=0 f; for f in "$@"; do total=$((total + $(stat -c %s "$f"))); done; echo "$total"; }

# measure LABEL BYTES COMMAND-TEXT ARGS...: one table row.
measure() {
  local label=$1 bytes=$2 text=$3
  shift 3
  say "$label: $text"
  run_timed "$@"
  if [[ $STATUS -ne 0 ]]; then
    FAILED=1
    text="$text (exit $STATUS: $(head -n 1 "$TMP/stderr.txt"))"
  fi
  ROWS+=("$(awk -v l="$label" -v b="$bytes" -v c="$text" -v p="$PEAK_KB" -v base="$BASE_KB" -v w="$WALL_S" 'BEGIN {
      mib = b / 1048576; peak = p / 1024
      printf "| %s | %.1f | `%s` | %.1f | %.2f | %.2f | %s |", l, mib, c, peak, (p * 1024) / b, ((p - base) * 1024) / b, w }')")
}

say "baseline: onnxtool --version"
run_timed --version
[[ $STATUS -eq 0 ]] || die "onnxtool --version failed: $(cat "$TMP/stderr.txt")"
BASE_KB=$PEAK_KB

# The synthetic models: file name, then make_large_model's options.
SPECS=()
for mb in $SIZES; do SPECS+=("large_${mb}mb.onnx --mb $mb"); done
if [[ $VARIANT_MB != 0 ]]; then
  SPECS+=("float_data_${VARIANT_MB}mb.onnx --mb $VARIANT_MB --typed")
  SPECS+=("small_weights_${VARIANT_MB}mb.onnx --mb $VARIANT_MB --hidden 64")
fi
LARGE=()
for spec in "${SPECS[@]}"; do
  read -r -a words <<<"$spec"
  model=$TMP/${words[0]}
  say "generating $model"
  "$MAKE_MODEL" "$model" "${words[@]:1}" >&2
  LARGE+=("$model")
done

for model in "${LARGE[@]}"; do
  name=$(basename "$model")
  size=$(file_bytes "$model")
  measure "$name" "$size" "inspect M" inspect "$model"
  measure "$name" "$size" "convert M -o OUT" convert "$model" -o "$TMP/out.onnx"
  rm -f "$TMP/out.onnx"
  measure "$name" "$size" "convert M -o OUT --external-data" convert "$model" -o "$TMP/ext.onnx" --external-data
  if [[ -f $TMP/ext.onnx && -f $TMP/ext.onnx.data ]]; then
    # The same model, its weights now in a side file: the size is that of both files.
    measure "$name (external data)" "$(file_bytes "$TMP/ext.onnx" "$TMP/ext.onnx.data")" \
      "inspect OUT (OUT + OUT.data)" inspect "$TMP/ext.onnx"
  fi
  rm -f "$TMP/ext.onnx" "$TMP/ext.onnx.data"
  measure "$name" "$size" "optimize M -o OUT" optimize "$model" -o "$TMP/opt.onnx"
  rm -f "$TMP/opt.onnx"
done

shopt -s nullglob
for model in "$ROOT"/.cache/models/*.onnx; do
  name=$(basename "$model")
  size=$(file_bytes "$model")
  measure "$name" "$size" "inspect M" inspect "$model"
  measure "$name" "$size" "convert M -o OUT" convert "$model" -o "$TMP/out.onnx"
  rm -f "$TMP/out.onnx"
  measure "$name" "$size" "optimize M -o OUT" optimize "$model" -o "$TMP/out.onnx"
  rm -f "$TMP/out.onnx"
done

# ------------------------------------------------------------------ report
echo "## onnxtool peak memory"
echo
echo "onnxtool $("$ONNXTOOL" --version 2>&1 | awk '{print $NF}') ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git')), $(uname -sm), $(date -u +%Y-%m-%d)."
echo "Peak RSS is \"Maximum resident set size\" from /usr/bin/time -v; it counts the pages of the"
echo "memory-mapped model that the process touched. 1 MiB = 1048576 bytes. large_*: 1024x1024"
echo "float32 weights in raw_data; float_data_*: the same in the typed float_data field;"
echo "small_weights_*: 64x64 weights, so about 190 nodes and 125 initializers per MiB."
echo
awk -v k="$BASE_KB" 'BEGIN { printf "Baseline (peak RSS of `onnxtool --version`): %.1f MiB. For small models the ratio is dominated by\n", k / 1024 }'
echo "this fixed cost; the last ratio column, (peak RSS - baseline) / file size, removes it."
echo
echo "| model | file (MiB) | command | peak RSS (MiB) | peak / file | (peak - baseline) / file | wall (s) |"
echo "| --- | ---: | --- | ---: | ---: | ---: | ---: |"
printf '%s\n' "${ROWS[@]}"
echo
# The requirement, on the large synthetic models only (small ones are all baseline).
for row in "${ROWS[@]}"; do
  [[ $row == "| "*"mb.onnx | "*"| \`inspect M\` |"* ]] || continue
  echo "$row" | awk -F'|' -v lim="$LIMIT" '{
      gsub(/ /, "", $2); r = $6 + 0
      printf "requirement (inspect peak <= %sx file size) on %s: %.2fx, %s\n", lim, $2, r, (r <= lim ? "met" : "NOT met") }'
done
for row in "${ROWS[@]}"; do
  [[ $row == "| large_"*"mb.onnx | "*"| \`optimize M -o OUT\` |"* ]] || continue
  echo "$row" | awk -F'|' '{
      gsub(/ /, "", $2); r = $6 + 0; w = $8 + 0
      printf "requirement (optimize under 1 s, peak <= 1.5x file size) on %s: %.2f s, %.2fx, %s\n", $2, w, r, (r <= 1.5 && w < 1 ? "met" : "NOT met") }'
done
exit "$FAILED"
