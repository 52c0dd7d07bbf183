#!/usr/bin/env bash
# Builds data/digits: real handwritten digits in MNIST IDX format, for configs/fc_mnist*.yaml.
#
# Source: the UCI "Optical Recognition of Handwritten Digits" data set (E. Alpaydin and
# C. Kaynak, 1998; licensed CC BY 4.0), as Debian's python3-sklearn package ships it
# (sklearn/datasets/data/digits.csv.gz, 1,797 digits of 8x8 pixels). Only that file is taken
# from the package (apt-get download + dpkg-deb); nothing is installed and nothing comes from
# outside Debian's archive. scripts/data/digits_to_idx.py converts it.
#
# Usage: scripts/prepare_digits.sh [OUTPUT_DIR]     (default: data/digits in the current directory,
#                                                   where the configs look for it)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-data/digits}
member=./usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz

if [ -s "$out/train-images-idx3-ubyte" ] && [ -s "$out/t10k-labels-idx1-ubyte" ]; then
  echo "prepare_digits: $out is ready"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
download() { (cd "$work" && apt-get download -q python3-sklearn >/dev/null 2>&1); }
if ! download; then
  # A fresh machine has no package lists yet.
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  download || { echo "prepare_digits: cannot download python3-sklearn from the Debian archive" >&2; exit 1; }
fi
dpkg-deb --fsys-tarfile "$work"/python3-sklearn_*.deb | tar -x -C "$work" "$member"
python3 "$root/scripts/data/digits_to_idx.py" "$work/$member" "$out"
cat > "$out/LICENSE.txt" <<'LICENSE'
UCI Optical Recognition of Handwritten Digits (E. Alpaydin, C. Kaynak, 1998),
https://archive.ics.uci.edu/dataset/80, licensed under Creative Commons Attribution 4.0
(CC BY 4.0). Converted to MNIST IDX (28x28) by csrun's scripts/prepare_digits.sh.
LICENSE
