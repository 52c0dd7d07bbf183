#!/usr/bin/env bash
# From a fresh clone: installs what is missing, builds csrun, prepares the example data and
# runs the main job on the shipped configs.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/setup.sh
scripts/build.sh csrun
scripts/prepare_digits.sh
csrun=build/apps/csrun/csrun

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

# The example run, in both Model Zoo formats, checked against its real data.
step "$csrun" validate configs/fc_mnist.yaml
step "$csrun" validate configs/fc_mnist_trainer.yaml --json --logging ERROR | head -n 20
# The example run compiled for a CS-2: layer pipelined, every kernel placed on the wafer. The plan,
# report.json, kernels.tsv and placement.svg land in model_dir/fc_mnist/compile/.
step "$csrun" compile configs/fc_mnist.yaml
# The main job: train it on the wafer simulator (CSX, bfloat16 emulated) on real handwritten digits,
# evaluating every 300 steps; checkpoints, logs and TensorBoard events land in model_dir/fc_mnist/.
rm -rf model_dir/fc_mnist
step "$csrun" train configs/fc_mnist.yaml
step "$csrun" eval configs/fc_mnist.yaml --all
# A real-size model, GPT-3 111M, sized and compiled without its dataset: weight streaming.
step "$csrun" compile configs/gpt3_111m.yaml --fake_data
# And a mistake, reported with the key it is about and what would be valid.
step "$csrun" validate configs/gpt2_tiny.yaml --fake_data --set trainer.init.model.num_heads=5 || true
