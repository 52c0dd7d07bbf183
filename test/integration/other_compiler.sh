#!/usr/bin/env bash
# A csrun that another compiler built (scripts/test.sh gives its Clang build the GCC build's)
# traces every tiny config into the same steps and trains it to the same checkpoint, byte for
# byte. A model builder that makes nodes in two operands of one call or operator traces them in
# the order the compiler evaluates operands (GCC right to left, Clang left to right): the plans,
# dropout's draws and the sums' orders would then differ with the compiler. Both run the kernel
# set the other csrun picks. Skipped (77) where no other csrun is given.
# Usage: other_compiler.sh ROOT CSRUN [OTHER_CSRUN]
set -euo pipefail
root=$1
csrun=$2
other=${3:-}
if [ -z "$other" ] || [ ! -x "$other" ]; then
  echo "skipped: no csrun built by another compiler to compare with (scripts/test.sh gives the" \
    "Clang build the GCC build's: scripts/build.sh --reference_csrun PATH)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
CSRUN_CPU=$("$other" --version | sed -n 's/^kernels: \([a-z0-9]*\).*/\1/p')
export CSRUN_CPU

# The names of a run's plans start with the fingerprint of the step each runs (train, eval).
fingerprints() { ls "$1/compile" | sed 's/-.*//' | sort | tr '\n' ' '; }

for params in "$root"/configs/*_tiny.yaml "$root"/configs/fc_mnist*.yaml; do
  name=$(basename "$params" .yaml)
  for side in this other; do
    binary=$csrun
    [ "$side" = other ] && binary=$other
    "$binary" train "$params" --fake_data --max_steps 2 --eval_steps 1 -o "$work/$name.$side" \
      > "$work/$name.$side.log" 2>&1 || { cat "$work/$name.$side.log"; fail "$name: $binary train"; }
  done
  this_steps=$(fingerprints "$work/$name.this")
  other_steps=$(fingerprints "$work/$name.other")
  [ "$this_steps" = "$other_steps" ] ||
    fail "$name: the steps traced differ: $this_steps here, $other_steps from $other"
  cmp "$work/$name.this/checkpoint_2.mdl" "$work/$name.other/checkpoint_2.mdl" ||
    fail "$name: the checkpoints after 2 steps differ from $other's"
  echo "$name: the same steps ($this_steps) and the same checkpoint"
done
