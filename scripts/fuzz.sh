#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang-14, ASan and UBSan, and runs each for a while.
#
#   scripts/fuzz.sh                     every target, 60 s each, 2 at a time
#   scripts/fuzz.sh --seconds 3600      long runs
#   scripts/fuzz.sh --jobs 1 check      chosen targets: model_decode check optimize convert tensor_file
#   scripts/fuzz.sh --build-only        build, seed the corpora, run nothing
#
# Installs clang-14 and libfuzzer-14-dev when missing (as root). Builds in
# build-fuzz/ (ONNXTOOL_FUZZ_DIR changes it). Each target's corpus grows in build-fuzz/corpus/T
# across runs; seeds come from the repo's models, fuzz/regressions/T and, when installed, the
# ONNX backend suite. A failing input is saved as build-fuzz/crashes/T-*; reproduce it with
# `build-fuzz/fuzz/fuzz_T FILE`, fix the cause, and add the file to fuzz/regressions/T/ (ctest
# replays that folder in every build). Prints a table of executions per target; the exit status
# is non-zero when any target crashed, hung, ran out of memory or threw what it must not.
set -euo pipefail

usage() {
  sed -n '2,16s/^# \{0,1\}//p' "$0"
}

seconds=60
jobs=2
build_only=0
targets=()
all_targets=(model_decode check optimize convert tensor_file)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --seconds needs a whole number of seconds" >&2; exit 2; }
      seconds="$2"
      shift ;;
    --jobs)
      [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --jobs needs a whole number" >&2; exit 2; }
      jobs="$2"
      shift ;;
    --build-only) build_only=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *)
      [[ " ${all_targets[*]} " == *" $1 "* ]] || { echo "fuzz.sh: unknown target '$1' (targets: ${all_targets[*]})" >&2; exit 2; }
      targets+=("$1") ;;
  esac
  shift
done
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
dir="${ONNXTOOL_FUZZ_DIR:-build-fuzz}"

# --- packages: clang and libFuzzer, and the library's own build dependencies
# shellcheck source=scripts/packages.sh
source "$root/scripts/packages.sh"
ensure_packages fuzz.sh required clang-14 libfuzzer-14-dev protobuf-compiler libprotobuf-dev \
  libeigen3-dev nlohmann-json3-dev libcli11-dev cmake ninja-build

# --- build: asserts on (no NDEBUG), -O1 keeps compile time and stack traces reasonable
if [[ ! -f "$dir/build.ninja" ]]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja -DONNXTOOL_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" >/dev/null
fi
build_targets=()
for t in "${targets[@]}"; do build_targets+=("fuzz_$t"); done
ninja -C "$dir" "${build_targets[@]}" | grep -v '^\[' || true
for t in "${targets[@]}"; do
  [[ -x "$dir/fuzz/fuzz_$t" ]] || { echo "fuzz.sh: build of fuzz_$t failed" >&2; exit 1; }
done

# --- seeds: model targets read models as they are; convert's first byte picks the conversion
# and tensor_file's the format (odd: .pb, even: .npy) and the declared kind (bits 1-2)
backend=/usr/share/libonnx-testdata/data
seeds="$dir/seeds"
rm -rf "$seeds"
models=()
while IFS= read -r -d '' f; do models+=("$f"); done < <(
  { find testdata -maxdepth 2 -name '*.onnx' -size -1024k -print0
    [[ -d "$backend/node" ]] && find "$backend" -name model.onnx -size -256k -print0; } 2>/dev/null)
tensors=()
while IFS= read -r -d '' f; do tensors+=("$f"); done < <(
  [[ -d "$backend/node" ]] && find "$backend/node" -name '*.pb' -size -64k -print0 2>/dev/null | head -z -n 800)
# the suite's sequence, optional and string values: tensor_file seeds them with the declared
# kind in the first byte's bits 1-2 (3: a sequence, 5: an optional, 7: a string tensor)
values=()
while IFS= read -r -d '' f; do values+=("$f"); done < <(
  [[ -d "$backend/node" ]] && find "$backend/node" \( -path '*sequence*' -o -path '*optional*' -o -path '*_seq*' \
    -o -path '*_opt*' -o -path '*string*' \) -name '*.pb' -size -64k -print0 2>/dev/null | head -z -n 300)
for t in "${targets[@]}"; do
  mkdir -p "$seeds/$t" "$dir/corpus/$t" "$dir/crashes"
  [[ -d fuzz/regressions/$t ]] && cp fuzz/regressions/"$t"/* "$seeds/$t/" 2>/dev/null || true
  i=0
  case "$t" in
    model_decode|check|optimize)
      for m in "${models[@]}"; do cp "$m" "$seeds/$t/m$((i++))"; done ;;
    convert)
      # every 9th model, each with four choices (two opsets, float16, float32)
      for m in "${models[@]}"; do
        if (( i++ % 9 == 0 )); then
          for c in 0 45 2 3; do { printf "\\$(printf '%03o' "$c")"; cat "$m"; } > "$seeds/$t/m$i-$c"; done
        fi
      done ;;
    tensor_file)
      for f in "${tensors[@]}"; do { printf '\001'; cat "$f"; } > "$seeds/$t/t$((i++)).pb"; done
      for f in "${values[@]}"; do
        for c in 003 005 007; do { printf "\\$c"; cat "$f"; } > "$seeds/$t/v$((i++)).pb"; done
      done
      for shape in "()" "(3,)" "(2, 3)" "(0, 4)"; do
        for descr in '<f4' '<f2' '|b1' '<i8' '|u1' '<U3'; do
          # numpy's own header layout: magic, version 1.0, little-endian length, padded dict
          header="{'descr': '$descr', 'fortran_order': False, 'shape': $shape, }"
          pad=$(( 64 - (10 + ${#header} + 1) % 64 ))
          { printf '\000\223NUMPY\001\000'; printf "\\$(printf '%03o' $(( (${#header} + pad + 1) % 256 )))\\$(printf '%03o' $(( (${#header} + pad + 1) / 256 )))"
            printf '%s%*s\n' "$header" "$pad" ''; head -c 48 /dev/urandom; } > "$seeds/$t/n$((i++)).npy"
        done
      done ;;
  esac
done
[[ $build_only -eq 1 ]] && { echo "fuzz.sh: built in $dir/fuzz; seeds in $seeds"; exit 0; }

# --- run, $jobs targets at a time
logs="$dir/logs"
mkdir -p "$logs"
run_one() {
  local t="$1"
  # One thread: the runner's pool would only add noise. Leaks are findings too.
  ONNXTOOL_THREADS=1 TMPDIR="$dir" \
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$dir/fuzz/fuzz_$t" "$dir/corpus/$t" "$seeds/$t" -max_total_time="$seconds" -timeout=25 \
      -rss_limit_mb=4096 -max_len=262144 -print_final_stats=1 -artifact_prefix="$dir/crashes/$t-" \
      > "$logs/$t.log" 2>&1
}
pids=()
declare -A status
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=("$!:$t")
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
done
for p in "${pids[@]}"; do
  if wait "${p%%:*}"; then status[${p#*:}]=0; else status[${p#*:}]=$?; fi
done

# --- table
failed=0
printf '\n%-13s %8s %12s %9s %8s  %s\n' target seconds executions "exec/s" corpus result
for t in "${targets[@]}"; do
  log="$logs/$t.log"
  execs="$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -n 1)"
  secs="$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+).*/\1/p' "$log" | tail -n 1)"
  corpus="$(find "$dir/corpus/$t" -type f | wc -l)"
  if [[ ${status[$t]} -eq 0 ]]; then
    result=ok
  else
    failed=1
    # (|| true: a finding none of these words name must still get its row, not end the script.)
    result="FAILED (exit ${status[$t]}): $(grep -m1 -E 'ERROR: |runtime error: |fuzz [a-z_]+: ' "$log" | cut -c1-120 || true); see $log"
  fi
  printf '%-13s %8s %12s %9s %8s  %s\n' "$t" "$seconds" "${execs:-?}" "${secs:-?}" "$corpus" "$result"
done
exit "$failed"
