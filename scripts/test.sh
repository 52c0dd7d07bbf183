#!/usr/bin/env bash
# From a fresh clone: installs what is missing, builds csrun and its tests (warnings are
# errors), and runs every test through CTest. The last lines are CTest's summary.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)"
