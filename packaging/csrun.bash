# Bash completion for csrun: the subcommands, each one's options and the values an option lists,
# read from the csrun being completed (its --help), so they always match that binary.

_csrun_reply() {
  mapfile -t COMPREPLY < <(compgen "$@")
}

_csrun() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local subcommand="" word
  for word in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    case $word in
      validate | compile | train | eval | worker) subcommand=$word && break ;;
    esac
  done
  if [ -z "$subcommand" ]; then
    _csrun_reply -W "validate compile train eval worker --help --version" -- "$cur"
    return
  fi

  local help
  help=$("${COMP_WORDS[0]}" "$subcommand" --help 2>/dev/null)
  # An option that lists its values prints them as "--wafer TEXT:{wse2,wse3}".
  local option_line
  option_line=$(printf '%s\n' "$help" | grep -E -m1 -- "^ +(-[a-z],)?${prev//./\\.} [A-Z]")
  if [ -n "$option_line" ]; then
    case $prev in
      -o | --model_dir) _csrun_reply -d -- "$cur" ;;
      -p | --params | --checkpoint_path | --sample_ledger | --secret_file) _csrun_reply -f -- "$cur" ;;
      *)
        local values
        values=$(printf '%s\n' "$option_line" | sed -n 's/.*:{\([^}]*\)}.*/\1/p' | tr ',' ' ')
        _csrun_reply -W "$values" -- "$cur"
        ;;
    esac
    return
  fi
  if [[ $cur == -* ]]; then
    _csrun_reply -W "$(printf '%s\n' "$help" | grep -oE -- '--[a-z_]+' | sort -u)" -- "$cur"
    return
  fi
  # The params file: YAML files and the directories that may hold them.
  mapfile -t COMPREPLY < <(
    compgen -f -X '!*.yaml' -- "$cur"
    compgen -f -X '!*.yml' -- "$cur"
    compgen -d -- "$cur"
  )
}

complete -o filenames -F _csrun csrun
