#!/usr/bin/env bash
# From a fresh clone: installs what is missing, builds csrun and its tests with warnings as errors,
# and runs every test through CTest: once with the kernel set csrun picks for this CPU, again with
# each other set the CPU runs (CSRUN_CPU), then once more from a Clang build (build-clang/).
# The last lines are CTest's summary.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" --test
"$root/scripts/build.sh" --werror

run_suite() {
  (cd "$1" && shift && ctest --output-on-failure -j "$(nproc)" "$@")
}

csrun=$root/build/apps/csrun/csrun
chosen=$("$csrun" --version | sed -n 's/^kernels: \([a-z0-9]*\).*/\1/p')
echo "test: the whole suite with the kernel set csrun picks here ($chosen)"
run_suite "$root/build"
for set in baseline avx2 avx512; do
  [ "$set" = "$chosen" ] && continue
  if ! CSRUN_CPU=$set "$csrun" --version >/dev/null 2>&1; then
    echo "test: kernel set $set: this CPU cannot run it"
    continue
  fi
  echo "test: the whole suite again with CSRUN_CPU=$set"
  CSRUN_CPU=$set run_suite "$root/build" --label-exclude kernel_set_independent
done

echo "test: the whole suite from a Clang build"
"$root/scripts/build.sh" --werror --clang
run_suite "$root/build-clang"
