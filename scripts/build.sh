#!/usr/bin/env bash
# Configures and builds csrun (Release, Ninja, ccache when present). Warnings never stop a user's
# build; scripts/test.sh builds with --werror, as CI does.
#
# Usage: scripts/build.sh [--werror] [--clang] [TARGET...]   (default: everything, tests included)
#   --werror   warnings are errors
#   --clang    build with Clang 16 into build-clang/ (default: GCC into build/); Debian 12's
#              default Clang, 14, lacks std::source_location with GCC 12's standard library
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
werror=OFF
dir=$root/build
compilers=()
while [ $# -gt 0 ]; do
  case $1 in
    --werror) werror=ON ;;
    --clang) dir=$root/build-clang; compilers=(-DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16) ;;
    --*) echo "build.sh: unknown option $1 (valid: --werror, --clang)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCSRUN_WARNINGS_AS_ERRORS=$werror \
  "${compilers[@]}" >/dev/null
if [ $# -gt 0 ]; then
  cmake --build "$dir" --target "$@"
else
  cmake --build "$dir"
fi
