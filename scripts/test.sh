#!/usr/bin/env bash
# From a fresh clone: installs what is missing, builds csrun and its tests with warnings as errors,
# and runs every test through CTest: once with the kernel set csrun picks for this CPU, again with
# each other set the CPU runs (CSRUN_CPU), then once more from a Clang build (build-clang/).
# The last lines are each suite's CTest summary and, last, the count over all of them.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" --test
"$root/scripts/build.sh" --werror

summaries=()
total=0
run_suite() {
  local name=$1 build=$2 log
  shift 2
  log=$(mktemp)
  (cd "$build" && ctest --output-on-failure -j "$(nproc)" "$@") | tee "$log"
  local summary
  summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)
  rm -f "$log"
  summaries+=("$name: $summary")
  total=$((total + ${summary##* }))
}

csrun=$root/build/apps/csrun/csrun
chosen=$("$csrun" --version | sed -n 's/^kernels: \([a-z0-9]*\).*/\1/p')
echo "test: the whole suite with the kernel set csrun picks here ($chosen)"
run_suite "GCC, kernel set $chosen" "$root/build"
for set in baseline avx2 avx512; do
  [ "$set" = "$chosen" ] && continue
  if ! CSRUN_CPU=$set "$csrun" --version >/dev/null 2>&1; then
    echo "test: kernel set $set: this CPU cannot run it"
    continue
  fi
  echo "test: the whole suite again with CSRUN_CPU=$set"
  CSRUN_CPU=$set run_suite "GCC, CSRUN_CPU=$set" "$root/build" --label-exclude kernel_set_independent
done

echo "test: the whole suite from a Clang build"
"$root/scripts/build.sh" --werror --clang
run_suite "Clang, kernel set $chosen" "$root/build-clang"

echo "test: every suite passed"
printf '  %s\n' "${summaries[@]}"
echo "100% tests passed, 0 tests failed out of $total"
