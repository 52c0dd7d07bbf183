#!/usr/bin/env bash
# `cpack -G DEB` makes a .deb that holds csrun, its configs, SLURM scripts, docs, man page and
# completion under /usr, declares the Debian packages of the libraries csrun links, and runs
# when extracted with dpkg -x.
# Usage: debian_package.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cpack --config "$build/CPackConfig.cmake" -B "$work/package" > "$work/cpack.out" 2>&1 ||
  { cat "$work/cpack.out"; fail "cpack failed"; }
debs=("$work"/package/csrun_*_amd64.deb)
[ -f "${debs[0]}" ] || fail "cpack made no csrun_*_amd64.deb: $(ls "$work/package")"
deb=${debs[0]}

dpkg-deb --contents "$deb" > "$work/contents"
for path in ./usr/bin/csrun ./usr/bin/csrun-gpt-hdf5 ./usr/share/csrun/configs/fc_mnist.yaml \
  ./usr/share/csrun/slurm/train.sbatch ./usr/share/doc/csrun/README.md \
  ./usr/share/man/man1/csrun.1 ./usr/share/bash-completion/completions/csrun; do
  grep -q " $path\$" "$work/contents" || fail "the package holds no $path"
done
depends=$(dpkg-deb -f "$deb" Depends)
for library in libopenblas libdnnl libhdf5 libzmq5 libyaml-cpp libstdc++6 libc6; do
  [[ $depends == *"$library"* ]] || fail "Depends lacks $library: $depends"
done

dpkg -x "$deb" "$work/root"
cd "$work"
"$here/installed_tree_checks.sh" "$work/root/usr"
echo "$(basename "$deb") works; Depends: $depends"
