#!/usr/bin/env bash
# Man pages from the help text: onnxtool.1 (the commands) and onnxtool-COMMAND.1 for each, its
# --help as the options section. Run by the build (packaging/CMakeLists.txt), so the pages are
# always the binary's own help.
#
#   packaging/make_man.sh ONNXTOOL VERSION OUT_DIR
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: $0 ONNXTOOL VERSION OUT_DIR" >&2; exit 2; }
bin=$1 version=$2 out=$3
mkdir -p "$out"

# roff-safe text: backslashes doubled, a leading dot or quote escaped.
escape() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

commands=$("$bin" --help | awk '/^Subcommands:/ { s = 1; next } s && /^  [a-z]/ { print $1 }')
{
  printf '.TH ONNXTOOL 1 "" "onnxtool %s" "User Commands"\n' "$version"
  printf '.SH NAME\nonnxtool \\- check, optimize, quantize, convert and run ONNX models\n'
  printf '.SH SYNOPSIS\n.B onnxtool\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n'
  printf '.SH COMMANDS\n'
  "$bin" --help | awk '/^Subcommands:/ { s = 1; next } s && /^  [a-z]/ { name = $1; $1 = ""; sub(/^ +/, ""); printf ".TP\n.B %s\n%s\n", name, $0 }' | escape
  printf '.SH EXIT STATUS\n0 success; 1 the model failed what was asked (check errors, outputs beyond tolerance, verification); 2 bad usage or unreadable input.\n'
  printf '.SH SEE ALSO\n'
  for c in $commands; do
    [[ $c == help ]] && continue
    printf '.BR onnxtool-%s (1)\n' "$c"
  done
} >"$out/onnxtool.1"
for c in $commands; do
  [[ $c == help ]] && continue
  {
    printf '.TH ONNXTOOL-%s 1 "" "onnxtool %s" "User Commands"\n' "${c^^}" "$version"
    printf '.SH NAME\nonnxtool-%s \\- %s\n' "$c" "$("$bin" --help | awk -v c="$c" '$1 == c { $1 = ""; sub(/^ +/, ""); print }' | escape)"
    printf '.SH SYNOPSIS\n.B onnxtool %s\n[\\fIOPTIONS\\fR]\n' "$c"
    printf '.SH OPTIONS\n.nf\n'
    "$bin" "$c" --help | escape
    printf '.fi\n.SH SEE ALSO\n.BR onnxtool (1)\n'
  } >"$out/onnxtool-$c.1"
done
