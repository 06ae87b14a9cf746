#!/usr/bin/env bash
# Builds onnxtool's Debian package (CPack) from a portable Release build.
#
#   scripts/package.sh [--arch LEVEL]     -> build-package/onnxtool_<version>_amd64.deb
#
# The kernels of a package cannot be compiled for the build machine's CPU (-march=native, the
# default of a source build): the package is built for an x86-64 micro-architecture level, by
# default x86-64-v3 (AVX2 and FMA: Intel since 2013, AMD since 2015); --arch x86-64-v2 or
# x86-64 for older machines, x86-64-v4 for AVX-512 ones. Install with `apt install ./FILE.deb`.
set -euo pipefail

arch=x86-64-v3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --arch)
      [[ $# -ge 2 ]] || { echo "package.sh: --arch needs a level (x86-64, x86-64-v2, -v3, -v4)" >&2; exit 2; }
      arch=$2
      shift ;;
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "package.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $arch =~ ^x86-64(-v[234])?$ ]] || { echo "package.sh: --arch $arch: not an x86-64 level" >&2; exit 2; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir=${ONNXTOOL_PACKAGE_DIR:-$root/build-package}
# shellcheck source=scripts/packages.sh
source "$root/scripts/packages.sh"
ensure_packages package.sh required protobuf-compiler libprotobuf-dev libcli11-dev nlohmann-json3-dev \
  libeigen3-dev cmake ninja-build g++ libvulkan-dev glslang-tools
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DONNXTOOL_NATIVE=OFF "-DCMAKE_CXX_FLAGS=-march=$arch" \
  -DONNXTOOL_BUILD_TESTS=OFF >/dev/null
cmake --build "$build_dir" --parallel "$(nproc)" | { grep -v -e '^ninja: no work to do\.$' || true; }
(cd "$build_dir" && cpack -G DEB >/dev/null)
ls "$build_dir"/onnxtool_*.deb
