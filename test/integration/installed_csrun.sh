#!/usr/bin/env bash
# csrun installed with `cmake --install` into a temporary prefix works outside the checkout: the
# binaries train a shipped config, the sbatch scripts find csrun on PATH (and say so when it is
# not there), and the docs, man page and bash completion are in place.
# Usage: installed_csrun.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
cd "$work"
"$here/installed_tree_checks.sh" "$prefix"

# The sbatch scripts run `srun csrun ...`; without SLURM here, a stand-in srun runs the command
# (test/integration/slurm_jobs.sh runs them on a real cluster).
mkdir -p shims
printf '#!/bin/sh\ncase $1 in --ntasks=*) shift ;; esac\nexec "$@"\n' > shims/srun
chmod +x shims/srun
PATH=$prefix/bin:$work/shims:/usr/bin:/bin bash "$prefix/share/csrun/slurm/validate.sbatch" \
  "$prefix/share/csrun/configs/fc_mnist.yaml" --fake_data > sbatch.out 2>&1 ||
  { cat sbatch.out; fail "validate.sbatch did not find the installed csrun on PATH"; }
grep -q "Config validation was successful!" sbatch.out || fail "validate.sbatch: $(cat sbatch.out)"
if ! PATH=$work/shims:/usr/bin:/bin command -v csrun >/dev/null; then
  status=0
  PATH=$work/shims:/usr/bin:/bin bash "$prefix/share/csrun/slurm/train.sbatch" x.yaml > missing.out 2>&1 ||
    status=$?
  [ "$status" -eq 1 ] || fail "train.sbatch without csrun exited $status"
  grep -q "csrun is not on PATH: install it (docs/install.md) or set CSRUN=/path/to/csrun" missing.out ||
    fail "train.sbatch without csrun said: $(cat missing.out)"
fi
echo "installed csrun works in $prefix"
