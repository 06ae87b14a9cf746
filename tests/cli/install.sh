#!/usr/bin/env bash
# What `cmake --install` and the Debian package put on a machine: the package of this build
# (cpack), installed with dpkg into a directory of its own, runs `onnxtool check` on a model; its
# man pages render; its bash completion completes commands and each command's options (compgen).
#
# Environment: ONNXTOOL (the binary, in its build directory, which cpack packages).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_work install

build=$(dirname "$ONNXTOOL")
[[ -f $build/CPackConfig.cmake ]] || { fail "no CPackConfig.cmake beside $ONNXTOOL"; finish; }
command -v cpack >/dev/null 2>&1 || skip_all "cpack (cmake)"

if (cd "$WORK" && cpack --config "$build/CPackConfig.cmake" -G DEB -B "$WORK/pkg" >"$WORK/cpack.log" 2>&1); then
  ok
else
  fail "cpack: $(tail -n 3 "$WORK/cpack.log")"
  finish
fi
deb=$(ls "$WORK"/pkg/onnxtool_*.deb 2>/dev/null | head -n 1)
[[ -f $deb ]] && ok || { fail "cpack wrote no .deb in $WORK/pkg"; finish; }

# dpkg installs it into a root of its own (its own database, nothing of this machine touched).
root=$WORK/root admin=$WORK/root/var/lib/dpkg
mkdir -p "$admin/info" "$admin/updates" "$admin/triggers"
: >"$admin/status"
if dpkg --root="$root" --admindir="$admin" --force-not-root --force-depends --force-script-chrootless -i "$deb" \
  >"$WORK/dpkg.log" 2>&1; then
  ok
else
  fail "dpkg -i: $(tail -n 3 "$WORK/dpkg.log")"
fi
dpkg-deb -f "$deb" Depends | grep -q libstdc++6 && ok || fail "the package declares no dependency on libstdc++6"
installed=$root/usr/bin/onnxtool
if [[ -x $installed ]]; then
  "$installed" check "$SOURCE_DIR/testdata/tiny_cnn.onnx" >"$WORK/check.txt" 2>&1 && grep -q "valid" "$WORK/check.txt" && ok ||
    fail "the installed onnxtool check: $(head -c 300 "$WORK/check.txt")"
  "$installed" --version | grep -qE '^onnxtool [0-9]' && ok || fail "the installed onnxtool --version"
else
  fail "no usr/bin/onnxtool in the package"
fi

# Man pages: one for the tool, one per command, made from the help text.
man_dir=$root/usr/share/man/man1
for page in onnxtool onnxtool-check onnxtool-quantize onnxtool-run; do
  [[ -f $man_dir/$page.1 ]] || { fail "no man page $page.1"; continue; }
  if command -v man >/dev/null 2>&1; then
    MANWIDTH=100 man -l "$man_dir/$page.1" 2>/dev/null | grep -q "onnxtool" && ok || fail "man -l $page.1 shows nothing"
  else
    grep -q '^\.TH' "$man_dir/$page.1" && ok || fail "$page.1 has no .TH header"
  fi
done
grep -q -- '--calib-method' "$man_dir/onnxtool-quantize.1" && ok || fail "onnxtool-quantize.1 lacks quantize's options"

# Bash completion, as bash calls it: COMP_WORDS and COMP_CWORD in, COMPREPLY out.
completion=$root/usr/share/bash-completion/completions/onnxtool
[[ -f $completion ]] && ok || fail "no bash completion in the package"
[[ -f $root/usr/share/zsh/vendor-completions/_onnxtool ]] && ok || fail "no zsh completion in the package"
# complete WORDS...: the completions of the last word.
complete_words() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _onnxtool; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$completion" "$@"
}
got=$(complete_words "$installed" "")
for c in check optimize quantize convert run compare extract edit; do
  grep -qx "$c" <<<"$got" && ok || fail "onnxtool <TAB> does not offer $c (got: $(echo $got))"
done
[[ $(complete_words "$installed" qu) == quantize ]] && ok || fail "onnxtool qu<TAB> is not quantize"
got=$(complete_words "$installed" quantize --calib)
grep -qx -- --calib-samples <<<"$got" && grep -qx -- --calib-method <<<"$got" && ok ||
  fail "onnxtool quantize --calib<TAB>: $(echo $got)"
got=$(complete_words "$installed" run --dev)
[[ $got == --device ]] && ok || fail "onnxtool run --dev<TAB>: $(echo $got)"
finish
