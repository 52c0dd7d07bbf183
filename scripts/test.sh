#!/usr/bin/env bash
# From a fresh clone: installs what is missing, builds csrun and its tests with warnings as errors,
# and runs every test through CTest: once with the kernel set csrun picks for this CPU, again with
# each other set the CPU runs (CSRUN_CPU; suites that run no kernels only once; of the AVX-512
# sets only the one csrun picks: the kernel-set tests run the others' products), then from a
# Clang build with AddressSanitizer and UndefinedBehaviorSanitizer (build-sanitize/) followed by a fixed
# run of every fuzz target, and the streaming and thread-team suites from a ThreadSanitizer build
# (build-tsan/). docs/reliability.md says what the sanitizer runs leave out and why.
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

avx512_set() {
  case $1 in avx512 | avx512bf16 | amx) return 0 ;; *) return 1 ;; esac
}

csrun=$root/build/apps/csrun/csrun
# The kernel set a csrun binary picks on this CPU.
kernel_set_of() { "$1" --version | sed -n 's/^kernels: \([a-z0-9]*\).*/\1/p'; }
chosen=$(kernel_set_of "$csrun")
# Where OpenBLAS does not know this CPU it falls back to its SSE3 kernels, several times slower,
# and the avx2 and baseline sets multiply every f32 product through it: their suites then run with
# the kernels csrun names (as its warning advises a user), so that runs sized for the chosen set
# keep to their time limits. (The chosen set's suite runs as OpenBLAS picks.)
suggested_core=$("$csrun" --version |
  sed -n 's/^sgemm: .*(OPENBLAS_CORETYPE=\([A-Za-z0-9]*\) runs its fast ones)$/\1/p')
echo "test: the whole suite with the kernel set csrun picks here ($chosen)"
run_suite "GCC, kernel set $chosen" "$root/build"
for set in baseline avx2 avx512 avx512bf16 amx; do
  [ "$set" = "$chosen" ] && continue
  if ! CSRUN_CPU=$set "$csrun" --version >/dev/null 2>&1; then
    echo "test: kernel set $set: this CPU cannot run it"
    continue
  fi
  # The AVX-512 sets (avx512, avx512bf16, amx) share every kernel but their matrix products,
  # compiled once for all three (lib/runtime/CMakeLists.txt): where csrun picks one of them, the
  # kernel-set tests of unit_runtime run the others' products and a training step on each (and
  # their own tests pin their oneDNN kernels); the whole suite once more would only add to CI's
  # time.
  if avx512_set "$set" && avx512_set "$chosen"; then
    echo "test: kernel set $set: the $chosen set's kernels but its products, which unit_runtime's kernel-set tests run"
    continue
  fi
  echo "test: the whole suite again with CSRUN_CPU=$set${suggested_core:+ and OPENBLAS_CORETYPE=$suggested_core (OpenBLAS does not know this CPU)}"
  if [ -n "$suggested_core" ]; then export OPENBLAS_CORETYPE=$suggested_core; fi
  CSRUN_CPU=$set run_suite "GCC, CSRUN_CPU=$set" "$root/build" --label-exclude kernel_set_independent
done
if [ -n "$suggested_core" ]; then unset OPENBLAS_CORETYPE; fi

echo "test: the whole suite from a Clang build with AddressSanitizer and UndefinedBehaviorSanitizer"
"$root/scripts/build.sh" --werror --sanitize --reference_csrun "$csrun"
# The set that build picks for itself (the GCC build's: lib/runtime builds the loop that times
# AVX512_BF16's dot products without the sanitizers).
sanitized_set=$(kernel_set_of "$root/build-sanitize/apps/csrun/csrun")
# Left out (docs/reliability.md): qemu cannot host AddressSanitizer's shadow memory; the installed
# and packaged csrun and the SLURM jobs check deployment; Open MPI's own allocations are not
# csrun's to check (the MPI ranks tests); the mutation and seven-release validate
# sweeps take 5 and 3 minutes here, and the params loader's fuzz target covers their code; the
# tiny configs train through the code of the five real files' steps (a minute here); the
# UNet's Dice run trains 120 steps, whose code its shorter cases run; one core against every core
# and the seq2seq configs' training on text (2 minutes each) run code the golden curves run; every
# golden curve trained under every split of its batch (a minute) runs the splits' code that the
# sample-ledger and batch-norm split tests run; the 16-bit conversions of every float32 (minutes
# each under ASan) do arithmetic on values, whose code the other 16-bit tests run.
LSAN_OPTIONS=suppressions=$root/test/lsan_suppressions.txt \
  run_suite "Clang + ASan + UBSan, kernel set $sanitized_set" "$root/build-sanitize" \
  -E "older CPUs|cmake --install|the .deb|sbatch scripts|MPI ranks|MPI job|every mutation|seven Model Zoo releases|five families train|segments the shapes set|one core and on every core|T5 and Transformer tiny configs|every split of the global batch|for every float32|for every value"
echo "test: every fuzz target on a fixed set of inputs"
"$root/scripts/fuzz.sh" --runs 3000

echo "test: the streaming and thread-team suites with ThreadSanitizer"
"$root/scripts/build.sh" --werror --tsan unit_stream unit_thread_team
TSAN_OPTIONS=suppressions=$root/test/tsan_suppressions.txt \
  run_suite "Clang + TSan, streams and thread team" "$root/build-tsan" -R "unit_stream|unit_thread_team"

echo "test: every suite passed"
printf '  %s\n' "${summaries[@]}"
echo "100% tests passed, 0 tests failed out of $total"
