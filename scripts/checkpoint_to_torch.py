#!/usr/bin/python3
"""Loads a csrun fc_mnist checkpoint into the equivalent PyTorch model and checks the eval loss.

The checkpoint is read with h5py (its datasets are the flattened PyTorch state-dict keys:
model.fc_layers.0.weight, ...), the weights go into a torch.nn MLP of the same shape, and the
mean NLL loss over the params' eval split (MNIST IDX files) is compared with what
`csrun eval --target_device CPU` reports for the same checkpoint and batches.

Needs Debian's python3-torch and python3-h5py; run with /usr/bin/python3:

    /usr/bin/python3 scripts/checkpoint_to_torch.py configs/fc_mnist.yaml
    /usr/bin/python3 scripts/checkpoint_to_torch.py configs/fc_mnist.yaml \
        --checkpoint model_dir/fc_mnist/checkpoint_900.mdl

Exit status: 0 when the two losses agree within --tolerance (relative), 1 when they do not,
2 on a usage or input error, 77 when torch or h5py is missing.
"""

import argparse
import gzip
import os
import re
import struct
import subprocess
import sys

try:
    import h5py
    import torch
    import yaml
except ImportError as missing:
    print(f"checkpoint_to_torch: {missing.name} is not installed "
          "(apt-get install python3-torch python3-h5py python3-yaml)", file=sys.stderr)
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    print(f"checkpoint_to_torch: {message}", file=sys.stderr)
    sys.exit(2)


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as file:
        data = file.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        fail(f"{path} is not an MNIST IDX file")
    rank = data[3]
    dims = struct.unpack(f">{rank}I", data[4:4 + 4 * rank])
    count = 1
    for dim in dims:
        count *= dim
    body = data[4 + 4 * rank:]
    if len(body) != count:
        fail(f"{path} holds {len(body)} bytes of values, its header promises {count}")
    return torch.frombuffer(bytearray(body), dtype=torch.uint8).reshape(dims)


def eval_split(data_dir):
    for suffix in ("", ".gz"):
        images = os.path.join(data_dir, "t10k-images-idx3-ubyte" + suffix)
        labels = os.path.join(data_dir, "t10k-labels-idx1-ubyte" + suffix)
        if os.path.exists(images) and os.path.exists(labels):
            pixels = read_idx(images).reshape(-1, 784).float()
            # The normalization csrun's MNISTDataProcessor applies.
            return (pixels / 255.0 - 0.1307) / 0.3081, read_idx(labels).long()
    fail(f"no t10k-images-idx3-ubyte / t10k-labels-idx1-ubyte in {data_dir} "
         "(scripts/prepare_digits.sh builds the UCI digits there)")


def load_model(checkpoint, activation):
    with h5py.File(checkpoint, "r") as file:
        state = {key[len("model."):]: torch.from_numpy(file[key][()])
                 for key in file.keys() if key.startswith("model.")}
    hidden = sorted(int(match.group(1)) for key in state
                    if (match := re.fullmatch(r"fc_layers\.(\d+)\.weight", key)))
    if not hidden or "last_layer.weight" not in state:
        fail(f"{checkpoint} has no fc_mnist weights (model.fc_layers.N.weight, "
             "model.last_layer.weight)")
    layers = []
    for index in hidden:
        weight = state[f"fc_layers.{index}.weight"]
        layers += [torch.nn.Linear(weight.shape[1], weight.shape[0]), activation()]
    last = state["last_layer.weight"]
    layers.append(torch.nn.Linear(last.shape[1], last.shape[0]))
    model = torch.nn.Sequential(*layers)
    renamed = {}
    for position, index in enumerate(hidden):
        for part in ("weight", "bias"):
            renamed[f"{2 * position}.{part}"] = state[f"fc_layers.{index}.{part}"]
    for part in ("weight", "bias"):
        renamed[f"{2 * len(hidden)}.{part}"] = state[f"last_layer.{part}"]
    model.load_state_dict(renamed)
    return model.eval()


def latest_checkpoint(model_dir):
    found = []
    for name in os.listdir(model_dir) if os.path.isdir(model_dir) else []:
        match = re.fullmatch(r"checkpoint_(\d+)(_\d{8}_\d{6})?\.mdl", name)
        if match:
            found.append((int(match.group(1)), os.path.join(model_dir, name)))
    if not found:
        fail(f"no checkpoint_<step>.mdl in {model_dir}; train first or pass --checkpoint")
    return max(found)[1]


def csrun_eval_loss(csrun, params, checkpoint, batches):
    command = [csrun, "eval", params, "--target_device", "CPU", "--checkpoint_path", checkpoint,
               "--eval_steps", str(batches)]
    result = subprocess.run(command, capture_output=True, text=True)
    found = re.search(r"Avg Eval Loss: ([0-9.eE+-]+)", result.stdout + result.stderr)
    if result.returncode != 0 or not found:
        fail(f"{' '.join(command)} failed:\n{result.stderr}")
    return float(found.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("params", help="the fc_mnist params file the checkpoint was trained with")
    parser.add_argument("--checkpoint", help="default: the latest checkpoint in model_dir")
    parser.add_argument("--csrun", default=os.path.join(ROOT, "build/apps/csrun/csrun"))
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()

    with open(args.params) as file:
        params = yaml.safe_load(file)
    if "eval_input" not in params or "model" not in params:
        fail(f"{args.params}: expected a legacy fc_mnist params file with eval_input and model")
    eval_input, model_params = params["eval_input"], params["model"]
    batch_size = int(eval_input["batch_size"])
    activations = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid}
    activation = activations.get(model_params.get("activation_fn", "relu"))
    if activation is None:
        fail(f"activation_fn {model_params['activation_fn']!r}: expected one of {list(activations)}")
    checkpoint = args.checkpoint or latest_checkpoint(params["runconfig"]["model_dir"])

    images, labels = eval_split(eval_input["data_dir"])
    batches = len(labels) // batch_size
    model = load_model(checkpoint, activation)
    with torch.no_grad():
        losses = [torch.nn.functional.cross_entropy(
                      model(images[b * batch_size:(b + 1) * batch_size]),
                      labels[b * batch_size:(b + 1) * batch_size]).item()
                  for b in range(batches)]
    torch_loss = sum(losses) / batches
    csrun_loss = csrun_eval_loss(args.csrun, args.params, checkpoint, batches)
    difference = abs(torch_loss - csrun_loss) / max(1.0, abs(torch_loss))
    print(f"checkpoint {checkpoint}: {batches} batches of {batch_size}")
    print(f"PyTorch eval loss {torch_loss:.6f}, csrun eval loss {csrun_loss:.6f}, "
          f"relative difference {difference:.2e} (tolerance {args.tolerance:g})")
    sys.exit(0 if difference <= args.tolerance else 1)


if __name__ == "__main__":
    main()
