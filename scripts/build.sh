#!/usr/bin/env bash
# Configures and builds csrun in build/ (Release, Ninja, ccache when present).
# Usage: scripts/build.sh [TARGET...]      (default: everything, tests included)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCSRUN_WARNINGS_AS_ERRORS=ON >/dev/null
if [ $# -gt 0 ]; then
  cmake --build "$root/build" --target "$@"
else
  cmake --build "$root/build"
fi
