#!/usr/bin/env bash
# A checkpoint csrun writes loads with h5py into the equivalent PyTorch model and gives the same
# eval loss (scripts/checkpoint_to_torch.py). Skipped (77) where python3-torch, python3-h5py or
# the UCI digits (scripts/prepare_digits.sh) are missing.
set -euo pipefail
root=$1
csrun=$2
/usr/bin/python3 -c 'import torch, h5py, yaml' 2>/dev/null || { echo "skipped: no torch/h5py"; exit 77; }
[ -f "$root/data/digits/t10k-labels-idx1-ubyte" ] || { echo "skipped: no data/digits"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e "s#./data/digits#$root/data/digits#" -e "s#./model_dir/fc_mnist#$work/model#" \
  "$root/configs/fc_mnist.yaml" > "$work/params.yaml"
"$csrun" train "$work/params.yaml" --target_device CPU --max_steps 40 >/dev/null 2>&1
/usr/bin/python3 "$root/scripts/checkpoint_to_torch.py" "$work/params.yaml" --csrun "$csrun"
