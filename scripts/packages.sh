# Sourced by the scripts that need Debian packages (build.sh, fuzz.sh, testdata/fetch_models.sh).
#
#   ensure_packages NAME required|optional PACKAGE...
#
# Installs the packages that are missing (as root, quietly). Not root: a required package stops
# the script (exit 1, naming the apt-get command); an optional one is named and skipped (the
# tests that need it skip). Without dpkg-query (not Debian), assumes they are installed.
ensure_packages() {
  local who="$1" need="$2"
  shift 2
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "$who: no dpkg-query (not Debian?); assuming $* are installed" >&2
    return 0
  fi
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if [[ "$(id -u)" -ne 0 ]]; then
    if [[ $need == required ]]; then
      echo "$who: missing Debian packages: ${missing[*]} (as root: apt-get install -y ${missing[*]})" >&2
      exit 1
    fi
    echo "$who: not installed: ${missing[*]} (as root: apt-get install -y ${missing[*]}); tests that need them will skip" >&2
    return 0
  fi
  echo "$who: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
