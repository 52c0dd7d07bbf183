#!/usr/bin/env bash
# csrun's benchmarks. Figures go to stdout; docs/benchmarks.md records them with the machine.
#
# Usage: scripts/bench.sh [SECTION...]     sections: validate (default: all)
#
#   validate   wall time of `csrun validate` (process start to exit) on every shipped config and
#              every Model Zoo config of the conformance set; median and max of 21 runs each.
#              Target: under 50 ms on a real config.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(validate)

scripts/build.sh csrun >/dev/null
csrun=$root/build/apps/csrun/csrun

# Milliseconds per run of a command, one number per line.
time_runs() {
  local runs=$1; shift
  for _ in $(seq "$runs"); do
    local start end
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    end=$(date +%s%N)
    awk -v ns=$((end - start)) 'BEGIN { printf "%.2f\n", ns / 1000000 }'
  done
}

median_and_max() {
  sort -n | awk '{ v[NR] = $1 } END { printf "%8.2f %8.2f\n", v[int((NR + 1) / 2)], v[NR] }'
}

bench_validate() {
  echo "## csrun validate: wall time per run in ms (21 runs each)"
  printf '%-80s %8s %8s\n' "params" "median" "max"
  scripts/prepare_digits.sh >/dev/null
  # The cost of starting the process at all (loading csrun and its libraries), for comparison.
  printf '%-80s ' "(baseline: csrun --version)"
  time_runs 21 "$csrun" --version | median_and_max
  for params in configs/*.yaml; do
    printf '%-80s ' "$params"
    time_runs 21 "$csrun" validate "$params" | median_and_max
  done
  for params in test/data/modelzoo/*.yaml; do
    printf '%-80s ' "$params --fake_data"
    time_runs 21 "$csrun" validate "$params" --fake_data | median_and_max
  done
}

echo "# csrun benchmarks, $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for section in "${sections[@]}"; do
  case $section in
    validate) bench_validate ;;
    *) echo "bench.sh: unknown section '$section' (sections: validate)" >&2; exit 2 ;;
  esac
done
