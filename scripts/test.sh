#!/usr/bin/env bash
# Runs every test: builds onnxtool, fetches the pinned test data, runs ctest, then does the same
# with the AddressSanitizer/UndefinedBehaviorSanitizer build, then runs each libFuzzer target for
# 30 s (ONNXTOOL_FUZZ_SECONDS changes it). Every stage runs even when an
# earlier one failed (except a ctest whose build failed); the exit status is non-zero when
# anything failed. The last line is the total over both ctest runs: "N passed, M failed".
#
# A test that cannot run (data or tools that testdata/fetch_models.sh fetches, a Vulkan device,
# disk room) is skipped, not passed; with the environment variable CI set (.ci/run sets it), any
# skipped test fails the run.
#
# ONNXTOOL_BUILD_DIR changes the build directories (default build and build-asan: DIR and DIR-asan).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 2

build_dir="${ONNXTOOL_BUILD_DIR:-build}"
asan_dir="${build_dir}-asan"
jobs=2

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

passed=0
failed=0
skipped=0
summary=()
stage_note=""
any_failure=0

# Runs one stage: NAME, then the command. Records its time and result.
stage() {
  local name="$1"
  shift
  echo
  echo "== $name"
  local start=$SECONDS status=0
  "$@" || status=$?
  local secs=$((SECONDS - start))
  if [[ $status -eq 0 ]]; then
    summary+=("$(printf '  %-14s %5ss  ok%s' "$name" "$secs" "${stage_note:-}")")
  else
    summary+=("$(printf '  %-14s %5ss  FAILED (exit %s)%s' "$name" "$secs" "$status" "${stage_note:-}")")
    any_failure=1
  fi
  stage_note=""
  return "$status"
}

# ctest in DIR; adds its counts to the totals (from "N% tests passed, F tests failed out of T").
run_ctest() {
  local dir="$1" status=0
  local log="$logs/ctest-${dir//\//_}.log"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 1200 2>&1 | tee "$log" || status=$?
  local line
  line="$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1 || true)"
  if [[ -n "$line" ]]; then
    local f t
    f="$(sed -E 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")"
    t="$(sed -E 's/.*tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"$line")"
    # ctest lists tests that exited 77 (could not run) as "NAME (Skipped)" and counts them as passed.
    local s
    s="$(grep -cE '^[[:space:]]*[0-9]+ - .* \(Skipped\)$' "$log" || true)"
    passed=$((passed + t - f - s))
    failed=$((failed + f))
    skipped=$((skipped + s))
    stage_note=" ($((t - f - s)) passed, $f failed, $s skipped)"
    if [[ $s -gt 0 ]]; then
      echo "skipped, for want of:"
      grep -h "ONNXTOOL-SKIP" "$dir"/Testing/Temporary/LastTest*.log 2>/dev/null | sort -u | head -n 20
    fi
    if [[ $s -gt 0 && -n ${CI:-} ]]; then
      echo "CI is set and $s test(s) were skipped (testdata/fetch_models.sh fetches the data and tools)"
      status=1
    fi
  elif grep -q 'No tests were found' "$log"; then
    stage_note=" (no tests)"
  fi
  return "$status"
}

# The Vulkan tests run with the Khronos validation layer in the Release stage; under the
# sanitizers the layer (uninstrumented, allocation-heavy) made them four times slower and checks
# nothing the Release stage does not, so the sanitizer stage runs them without it.
run_asan_ctest() {
  ONNXTOOL_VULKAN_VALIDATION=0 \
  LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp" \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest "$asan_dir"
}

if stage "build" scripts/build.sh --build-dir "$build_dir"; then build_ok=1; else build_ok=0; fi
stage "fetch data" testdata/fetch_models.sh || true
if [[ $build_ok -eq 1 ]]; then
  stage "ctest" run_ctest "$build_dir" || true
else
  summary+=("  ctest          skipped (the build failed)")
fi
if stage "build asan" scripts/build.sh --asan --build-dir "$asan_dir"; then asan_ok=1; else asan_ok=0; fi
if [[ $asan_ok -eq 1 ]]; then
  stage "ctest asan" run_asan_ctest || true
else
  summary+=("  ctest asan     skipped (the build failed)")
fi

# libFuzzer (clang, ASan, UBSan) on every way onnxtool reads untrusted bytes, 30 s per target;
# long runs: scripts/fuzz.sh --seconds N.
ONNXTOOL_FUZZ_DIR="${build_dir}-fuzz" stage "fuzz" scripts/fuzz.sh --seconds "${ONNXTOOL_FUZZ_SECONDS:-30}" || true

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
[[ $skipped -eq 0 ]] || echo "$skipped skipped (could not run)"
echo "$passed passed, $failed failed"
if [[ $any_failure -ne 0 || $failed -ne 0 || ($skipped -ne 0 && -n ${CI:-}) ]]; then
  exit 1
fi
