#!/usr/bin/env bash
# The binary built here runs on older x86-64 CPUs and picks the kernels each one runs: under
# qemu's CPU emulation, a Nehalem (x86-64-v2, no AVX) gets the baseline set and qemu's most
# capable model (AVX2, no AVX-512, in Debian 12's qemu 7.2) the avx2 set; each trains a few steps.
# A set the CPU lacks is refused with the features it lacks. Skipped (77) without qemu-user
# (scripts/setup.sh --test installs it).
# Usage: older_cpus.sh CSRUN ROOT
set -euo pipefail
csrun=$1
root=$2
command -v qemu-x86_64 >/dev/null || { echo "skipped: no qemu-x86_64 (package qemu-user)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# OpenBLAS must detect the emulated CPU itself, not take a core type from the environment.
unset OPENBLAS_CORETYPE CSRUN_CPU

for entry in Nehalem:baseline max:avx2; do
  cpu=${entry%%:*} expected=${entry#*:}
  version=$(qemu-x86_64 -cpu "$cpu" "$csrun" --version) || fail "csrun --version on $cpu"
  grep -q "^kernels: $expected (the best this CPU runs" <<<"$version" ||
    fail "on $cpu: expected the $expected kernels: $version"
  # On one core: emulated, the cores' spin-waits for each other would take most of the time.
  taskset -c 0 qemu-x86_64 -cpu "$cpu" "$csrun" train "$root/configs/fc_mnist.yaml" --fake_data \
    --max_steps 3 --eval_steps 2 -o "$work/$cpu" > "$work/$cpu.out" 2>&1 ||
    { cat "$work/$cpu.out"; fail "training on $cpu"; }
  grep -q "Training completed successfully!" "$work/$cpu.out" || fail "on $cpu: $(cat "$work/$cpu.out")"
done

status=0
CSRUN_CPU=avx512 qemu-x86_64 -cpu Nehalem "$csrun" --version > "$work/forced.out" 2>&1 || status=$?
[ "$status" -eq 2 ] || fail "CSRUN_CPU=avx512 on Nehalem exited $status"
grep -q "csrun: CSRUN_CPU=avx512: this CPU cannot run the avx512 kernels: it lacks avx, avx2" \
  "$work/forced.out" || fail "CSRUN_CPU=avx512 on Nehalem said: $(cat "$work/forced.out")"
echo "csrun runs on Nehalem (baseline) and qemu's max CPU (avx2)"
