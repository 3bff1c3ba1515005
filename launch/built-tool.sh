# Sourced by launch/simulate.sh and launch/soak.sh, which run a tool from
# this tree's build: reads their command line and checks the tool is built.
#
#   built_tool_args "$@"
#       Sets BUILD (--build DIR; default build) and ARGS (every other
#       argument, in order). -h/--help prints the calling script's header
#       (its comment lines after the first line) and exits 0.
#   built_tool_has OPTION...
#       Succeeds when ARGS holds one of the OPTIONs (to add a default).
#   built_tool_require NAME PATH
#       Exits 2, naming NAME, unless PATH is an executable.

built_tool_args() {
  BUILD=build
  ARGS=()
  while (($#)); do
    case "$1" in
      --build) BUILD=$2; shift 2 ;;
      -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; exit 0 ;;
      *) ARGS+=("$1"); shift ;;
    esac
  done
}

built_tool_has() {
  local option
  for option in "$@"; do
    [[ " ${ARGS[*]} " == *" $option "* ]] && return 0
  done
  return 1
}

built_tool_require() {
  [[ -x $2 ]] || { echo "$1: no $2; build first (ninja -C $BUILD)" >&2; exit 2; }
}
