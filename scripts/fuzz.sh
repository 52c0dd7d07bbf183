#!/usr/bin/env bash
# Runs csrun's libFuzzer targets (test/fuzz) on their seed corpora, from the sanitizer build
# (build-sanitize/: AddressSanitizer and UndefinedBehaviorSanitizer), and prints per target the
# executions, the time and the result. A crash, leak, hang (10 s per input) or use of more than
# 2 GB is a finding: libFuzzer writes the input to build-sanitize/fuzz-findings/, the script
# runs it once more for a symbolized report and exits 1.
#
# Usage: scripts/fuzz.sh [--runs N | --seconds S] [TARGET...]
#   --runs N     CI's bounded run: each target runs its seed corpus, then the targets whose
#                input csrun parses itself run N more inputs from a fixed seed. The HDF5-backed
#                targets (checkpoint, gpt_hdf5_reader) run their seed corpus only there: their
#                bytes are parsed by libhdf5, whose memory errors on hostile files are recorded
#                in docs/reliability.md and are not csrun's to fix.
#   --seconds S  each target runs for S seconds, keeping what it learns in
#                build-sanitize/fuzz-corpus/ for the next run (default: 60 seconds)
#   TARGET       params_loader stream_frame checkpoint checkpoint_seal plan_decoder
#                mnist_reader gpt_hdf5_reader bert_csv_reader finetuning_reader
#                seq2seq_text_reader (default: all)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-sanitize
limit=(-max_total_time=60)
persistent=1
while [ $# -gt 0 ]; do
  case $1 in
    --runs) limit=(-runs="$2" -seed=1); persistent=0; shift ;;
    --seconds) limit=(-max_total_time="$2"); shift ;;
    --*) echo "fuzz.sh: unknown option $1 (valid: --runs N, --seconds S)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
  targets=(params_loader stream_frame checkpoint checkpoint_seal plan_decoder mnist_reader
    gpt_hdf5_reader bert_csv_reader finetuning_reader seq2seq_text_reader)

# The build keeps its warnings setting (scripts/test.sh makes it with --werror): switching it
# would rebuild everything the targets link.
werror=()
grep -qx 'CSRUN_WARNINGS_AS_ERRORS:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && werror=(--werror)
"$root/scripts/build.sh" "${werror[@]}" --sanitize "${targets[@]/%/_fuzz}" >/dev/null

# Seeds beyond each target's own corpus: the project's params files are seeds for the loader,
# the checkpoint seeds for the seal's check.
extra_seeds() {
  case $1 in
    params_loader) echo "$root/configs $root/test/data/bad_params" ;;
    checkpoint_seal) echo "$root/test/fuzz/corpus/checkpoint" ;;
  esac
}

# What every run of a target has in its environment: libhdf5's own leaks suppressed, OpenBLAS on
# the target's thread.
sanitizer_env=(LSAN_OPTIONS="suppressions=$root/test/lsan_suppressions.txt" OPENBLAS_NUM_THREADS=1)

# Runs the input a finding saved (named in its log) once more with a symbolized report appended
# to the log, bounded in time as the fuzzing was. Clang 16's runtime does not find Debian's
# llvm-symbolizer link by itself ("invalid path to external symbolizer"): it is named.
symbolize_finding() {
  local input symbolizer
  input=$(sed -n 's/^.*Test unit written to \(.*\)$/\1/p' "$2" | tail -1)
  [ -n "$input" ] && [ -f "$input" ] || return 0
  symbolizer=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
  if [ -z "$symbolizer" ]; then
    echo "fuzz.sh: no llvm-symbolizer to symbolize the report (apt-get install llvm)" >>"$2"
    return 0
  fi
  echo "fuzz.sh: $input once more, symbolized:" >>"$2"
  env "${sanitizer_env[@]}" ASAN_SYMBOLIZER_PATH="$(readlink -f "$symbolizer")" \
    ASAN_OPTIONS=allocator_may_return_null=1 timeout -k 10 120 "$build/test/fuzz/${1}_fuzz" \
    -timeout=10 -rss_limit_mb=2048 "$input" >>"$2" 2>&1 || true
}

findings=$build/fuzz-findings
mkdir -p "$findings"
failed=0
summary=()
for target in "${targets[@]}"; do
  if [ $persistent = 1 ]; then
    corpus=$build/fuzz-corpus/$target
    mkdir -p "$corpus"
  else
    corpus=$(mktemp -d)
  fi
  log=$(mktemp)
  run_limit=("${limit[@]}")
  if [ $persistent = 0 ] && { [ "$target" = checkpoint ] || [ "$target" = gpt_hdf5_reader ]; }; then
    run_limit=(-runs=0)
  fi
  # A huge allocation libhdf5 attempts for a malformed header fails as it would outside the
  # sanitizer (HDF5 then reports an error); libhdf5's own leaks on such files are suppressed.
  # Reports are not symbolized while the target runs: a symbolizer started at the end of an
  # out-of-memory report once failed, and the report hung with a forked copy of the fuzzer going
  # on; the finding's input is run once more afterwards, symbolized, into the same log. That run
  # also records whole stacks of allocations and frees; while fuzzing, one frame each is kept
  # (unwinding and storing them was a tenth of the params loader's profile; side by side, it ran
  # twice the inputs without them).
  # shellcheck disable=SC2046
  if env "${sanitizer_env[@]}" ASAN_OPTIONS=allocator_may_return_null=1:symbolize=0:malloc_context_size=1 \
      "$build/test/fuzz/${target}_fuzz" "${run_limit[@]}" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/$target-" \
      "$corpus" "$root/test/fuzz/corpus/$target" $(extra_seeds "$target") >"$log" 2>&1; then
    result=ok
  else
    result="FINDING (see $log and $findings)"
    failed=1
    symbolize_finding "$target" "$log"
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  seconds=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log")
  summary+=("$(printf '%-20s %10s executions %6s s  %s' "$target" "${runs:-?}" "${seconds:-?}" "$result")")
  [ "$result" = ok ] && rm -f "$log"
  [ $persistent = 1 ] || rm -rf "$corpus"
done
printf 'fuzz: %s\n' "${summary[@]}"
exit $failed
