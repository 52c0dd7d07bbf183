#!/usr/bin/env bash
# Configures and builds csrun (Release, Ninja, ccache when present). Warnings never stop a user's
# build; scripts/test.sh builds with --werror, as CI does.
#
# Usage: scripts/build.sh [--werror] [--clang|--sanitize|--tsan] [--reference_csrun PATH] [TARGET...]
#   (default: everything, tests included)
#   --werror    warnings are errors
#   --reference_csrun PATH
#               a csrun built by another compiler: the build's tests check that it traces and
#               trains the tiny configs to the same bits (scripts/test.sh gives the Clang build
#               the GCC build's)
#   --clang     build with Clang 16 into build-clang/ (default: GCC into build/); Debian 12's
#               default Clang, 14, lacks std::source_location with GCC 12's standard library
#   --sanitize  Clang 16 with AddressSanitizer, UndefinedBehaviorSanitizer and the libFuzzer
#               targets, into build-sanitize/ (see docs/reliability.md)
#   --tsan      Clang 16 with ThreadSanitizer and this CPU's kernel set only, into build-tsan/
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
werror=OFF
reference=
dir=$root/build
compilers=()
clang=(-DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16)
while [ $# -gt 0 ]; do
  case $1 in
    --werror) werror=ON ;;
    --reference_csrun)
      [ $# -ge 2 ] || { echo "build.sh: --reference_csrun needs a path" >&2; exit 2; }
      reference=$2
      shift ;;
    --clang) dir=$root/build-clang; compilers=("${clang[@]}") ;;
    --sanitize)
      dir=$root/build-sanitize
      compilers=("${clang[@]}" -DCSRUN_SANITIZE=address,undefined -DCSRUN_FUZZ=ON) ;;
    # One kernel set, for this CPU: the build only checks threads, on the machine that builds it.
    --tsan) dir=$root/build-tsan; compilers=("${clang[@]}" -DCSRUN_SANITIZE=thread -DCSRUN_NATIVE_ARCH=ON) ;;
    --*)
      echo "build.sh: unknown option $1 (valid: --werror, --clang, --sanitize, --tsan," \
        "--reference_csrun PATH)" >&2
      exit 2 ;;
    *) break ;;
  esac
  shift
done
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCSRUN_WARNINGS_AS_ERRORS=$werror \
  -DCSRUN_REFERENCE_CSRUN="$reference" "${compilers[@]}" >/dev/null
if [ $# -gt 0 ]; then
  cmake --build "$dir" --target "$@"
else
  cmake --build "$dir"
fi
