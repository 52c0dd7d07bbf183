#!/usr/bin/env bash
# csrun's benchmarks. Figures go to stdout; docs/benchmarks.md records them with the machine.
#
# Usage: scripts/bench.sh [SECTION...]     sections: validate, trace (default: all)
#
#   validate   wall time of `csrun validate` (process start to exit) on every shipped config and
#              every Model Zoo config of the conformance set; median and max of 21 runs each.
#              Target: under 50 ms on a real config.
#   trace      `csrun validate --fake_data` of GPT-2 small and GPT-3 6.7B, which traces their whole
#              training step shape-only: wall time (median of 11) and peak resident memory.
#              Target: well under a second.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(validate trace)

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

# Peak resident memory (MB) of one run of a command.
peak_memory_mb() {
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1))' "$@"
}

bench_trace() {
  echo "## Tracing whole training steps (csrun validate --fake_data): ms and peak MB"
  local work
  work=$(mktemp -d)
  # The Model Zoo's 6.7B config minus the one key the Model Zoo itself rejects.
  grep -v use_cs_grad_accum test/data/modelzoo/gpt3_r2.0.2__params_gpt3_6p7b.yaml > "$work/gpt3_6p7b.yaml"
  printf '%-50s %8s %8s %8s\n' "model" "median" "max" "peak MB"
  for entry in "GPT-2 small (124M, batch 112 x 2048):test/data/modelzoo/gpt2_r2.3.1__params_gpt2_small.yaml" \
               "GPT-3 6.7B (batch 104 x 2048):$work/gpt3_6p7b.yaml"; do
    local name=${entry%%:*} params=${entry#*:}
    printf '%-50s ' "$name"
    printf '%s %8s\n' "$(time_runs 11 "$csrun" validate "$params" --fake_data | median_and_max)" \
      "$(peak_memory_mb "$csrun" validate "$params" --fake_data)"
  done
  rm -rf "$work"
}

echo "# csrun benchmarks, $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for section in "${sections[@]}"; do
  case $section in
    validate) bench_validate ;;
    trace) bench_trace ;;
    *) echo "bench.sh: unknown section '$section' (sections: validate, trace)" >&2; exit 2 ;;
  esac
done
