#!/usr/bin/env bash
# Installs the Debian packages onnxtool needs (when missing) and builds it with CMake + Ninja.
#
#   scripts/build.sh                  Release build in build/ -> build/onnxtool
#   scripts/build.sh --asan           ASan+UBSan RelWithDebInfo build in build-asan/
#   scripts/build.sh --build-dir DIR  build in DIR instead
#
# ONNXTOOL_BUILD_DIR changes the default directory (DIR, and DIR-asan with --asan);
# ONNXTOOL_CACHE_DIR, when set, tells the tests where testdata/fetch_models.sh put the models.
# Quiet and quick when everything is installed and up to date.
set -euo pipefail

usage() {
  sed -n '2,10s/^# \{0,1\}//p' "$0"
}

asan=0
build_dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --asan) asan=1 ;;
    --build-dir)
      [[ $# -ge 2 ]] || { echo "build.sh: --build-dir needs a directory" >&2; exit 2; }
      build_dir="$2"
      shift ;;
    --build-dir=*) build_dir="${1#--build-dir=}" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "build.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# --- packages
# shellcheck source=scripts/packages.sh
source "$root/scripts/packages.sh"
ensure_packages build.sh required protobuf-compiler libprotobuf-dev libcli11-dev nlohmann-json3-dev \
  libeigen3-dev doctest-dev cmake ninja-build g++
# Vulkan: headers and the shader compiler to build; Mesa's lavapipe (a Vulkan device on the CPU)
# and the Khronos validation layer for the tests. The binary itself opens the loader at run time
# and runs on the CPU where there is none.
ensure_packages build.sh required libvulkan-dev glslang-tools mesa-vulkan-drivers vulkan-validationlayers

# --- configure and build
default_dir="${ONNXTOOL_BUILD_DIR:-build}"
if [[ $asan -eq 1 ]]; then
  build_dir="${build_dir:-${default_dir}-asan}"
  # -g1 (line tables, no variables) is all the sanitizers' stack traces need, and compiles the
  # kernel files a third faster than -g; -O1 compiles the libraries outside the runner faster
  # than -O2 (the runner's kernels stay at -O3: runner/CMakeLists.txt).
  cmake_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
              -DONNXTOOL_SANITIZE=ON -DONNXTOOL_BUILD_TESTS=ON)
else
  build_dir="${build_dir:-$default_dir}"
  cmake_args=(-DCMAKE_BUILD_TYPE=Release -DONNXTOOL_SANITIZE=OFF -DONNXTOOL_BUILD_TESTS=ON)
fi
if [[ -n "${ONNXTOOL_CACHE_DIR:-}" ]]; then
  cmake_args+=("-DONNXTOOL_CACHE_DIR=$ONNXTOOL_CACHE_DIR")
fi
# In CI (.ci/run sets CI) a warning fails the build: both builds are kept warning-free.
if [[ -n "${CI:-}" ]]; then
  cmake_args+=(-DONNXTOOL_WERROR=ON)
else
  cmake_args+=(-DONNXTOOL_WERROR=OFF)
fi

# A directory configured with another generator cannot switch to Ninja in place.
if [[ -f "$build_dir/CMakeCache.txt" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build_dir/CMakeCache.txt"; then
  echo "build.sh: $build_dir was configured with another generator; remove it or pass --build-dir" >&2
  exit 1
fi

mkdir -p "$build_dir"
configure_log="$build_dir/configure.log"
if ! cmake -S . -B "$build_dir" -G Ninja "${cmake_args[@]}" >"$configure_log" 2>&1; then
  cat "$configure_log" >&2
  echo "build.sh: cmake configure failed in $build_dir (log: $configure_log)" >&2
  exit 1
fi

# Ninja's progress stays visible; its "no work to do" and glob re-check lines do not.
if ! cmake --build "$build_dir" --parallel "$(nproc)" | { grep --line-buffered -v -e '^ninja: no work to do\.$' -e '^\[0/[0-9]*\] Re-checking globbed directories\.\.\.$' || true; }; then
  echo "build.sh: build failed in $build_dir" >&2
  exit 1
fi
