#!/usr/bin/env bash
# Builds data/shapes: the segmentation set of configs/unet_tiny.yaml, in the Model Zoo UNet's
# HDF5 layout (Hdf5DataProcessor: train_input/ and eval_input/ directories of .h5 files, groups
# example_<i> with a uint8 image [1, H, W] and its float32 0/1 mask). Each 32 x 32 grey image
# holds one to three discs (the mask) and up to two squares of the same brightness
# (background), drawn by csrun-shapes-hdf5 (built with csrun) from fixed seeds: 512 training and
# 128 evaluation images, the same bytes on every machine.
#
# Usage: scripts/prepare_shapes.sh [OUTPUT_DIR]     (default: data/shapes in the current
#                                                   directory, where the config looks for it)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-data/shapes}

if [ -s "$out/train_input/shapes-0_p0.h5" ] && [ -s "$out/eval_input/shapes-0_p0.h5" ]; then
  echo "prepare_shapes: $out is ready"
  exit 0
fi
# From a checkout, the writer is built there; an installed csrun has it beside csrun.
if [ -x "$root/scripts/build.sh" ]; then
  "$root/scripts/build.sh" csrun-shapes-hdf5 >/dev/null
  writer=$root/build/apps/shapes_hdf5/csrun-shapes-hdf5
else
  writer=$(command -v csrun-shapes-hdf5) ||
    { echo "prepare_shapes: csrun-shapes-hdf5 is not on PATH (it is installed with csrun)" >&2; exit 1; }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/train_input" "$work/eval_input"
"$writer" "$work/train_input/shapes-0_p0.h5" 512 32 1
"$writer" "$work/eval_input/shapes-0_p0.h5" 128 32 2
chmod 755 "$work"
mkdir -p "$(dirname "$out")"
rm -rf "$out"
mv "$work" "$out"
trap - EXIT
echo "prepare_shapes: wrote $out"
