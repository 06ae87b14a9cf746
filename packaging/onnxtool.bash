# bash completion for onnxtool: the subcommands, then the options of the one given (read from its
# --help, so they are always the installed binary's), then file names.
_onnxtool_options() {
  # The option column of a help text: "  -o,--output TEXT  ..." gives --output (and -o).
  "$1" "$2" --help 2>/dev/null | grep -oE '^ +(-[a-zA-Z],)?--[a-z][a-z0-9-]*' | sed -E 's/^ +//; s/,/ /'
}

_onnxtool() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    if [[ ${COMP_WORDS[i]} != -* ]]; then
      cmd=${COMP_WORDS[i]}
      break
    fi
  done
  if [[ -z $cmd ]]; then
    local commands
    commands=$("${COMP_WORDS[0]}" --help 2>/dev/null | awk '/^Subcommands:/ { s = 1; next } s && /^  [a-z]/ { print $1 }')
    if [[ $cur == -* ]]; then
      mapfile -t COMPREPLY < <(compgen -W "--help --version" -- "$cur")
    else
      mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
    fi
  elif [[ $cmd == help ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$("${COMP_WORDS[0]}" --help 2>/dev/null | awk '/^Subcommands:/ { s = 1; next } s && /^  [a-z]/ { print $1 }')" -- "$cur")
  elif [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_onnxtool_options "${COMP_WORDS[0]}" "$cmd")" -- "$cur")
  else
    # Models, sample folders, output paths.
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
}

complete -F _onnxtool onnxtool
