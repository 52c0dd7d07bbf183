#!/usr/bin/python3
"""Golden forward values and gradients of csrun's ops and convolutional layers, computed by PyTorch
in float32 (the convolutions in float64, see FLOAT64).

For each case: its inputs, the output, and the gradient of sum(output * w) with respect to every
floating input, for fixed w. test/unit/nn/golden_ops_test.cpp rebuilds each case with csrun's ops
and compares (relative error <= 1e-5). Run with Debian's python3-torch:
    /usr/bin/python3 scripts/golden/ops.py
"""
import torch
import torch.nn.functional as F

from golden_common import values, write

torch.manual_seed(0)


def tensor(stream, shape, low=-1.0, high=1.0):
    count = 1
    for d in shape:
        count *= d
    data = [low + (high - low) * (0.05 + 0.9 * v) for v in values(stream, count)]
    return torch.tensor(data, dtype=torch.float32).reshape(shape)


def ids(data, shape):
    return torch.tensor(data, dtype=torch.int64).reshape(shape)


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def cross_entropy(logits, labels):
    return F.cross_entropy(logits, labels, reduction="none")


CASES = {
    "add": ([(2, 3), (3,)], lambda a, b: a + b),
    "sub": ([(2, 3), (2, 1)], lambda a, b: a - b),
    "mul": ([(2, 3), (2, 3)], lambda a, b: a * b),
    "div": ([(2, 3), ((2, 3), 0.5, 2.0)], lambda a, b: a / b),
    "pow": ([((4,), 0.5, 2.0), ((4,), -1.0, 2.0)], torch.pow),
    "maximum": ([((5,), -1.0, 0.0), ((5,), 0.1, 1.0)], torch.maximum),
    "minimum": ([((5,), -1.0, 0.0), ((5,), 0.1, 1.0)], torch.minimum),
    "where": ([(2, 3), (2, 3)], lambda a, b: torch.where(a > 0, a * b, b)),
    "neg": ([(6,)], torch.neg),
    "abs": ([(6,)], torch.abs),
    "exp": ([(6,)], torch.exp),
    "log": ([((6,), 0.2, 2.0)], torch.log),
    "sqrt": ([((6,), 0.2, 2.0)], torch.sqrt),
    "rsqrt": ([((6,), 0.2, 2.0)], torch.rsqrt),
    "sin": ([((6,), -3.0, 3.0)], torch.sin),
    "cos": ([((6,), -3.0, 3.0)], torch.cos),
    "tanh": ([((6,), -2.0, 2.0)], torch.tanh),
    "sigmoid": ([((6,), -2.0, 2.0)], torch.sigmoid),
    "relu": ([(6,)], torch.relu),
    "erf": ([((6,), -2.0, 2.0)], torch.erf),
    "gelu": ([((6,), -3.0, 3.0)], F.gelu),
    "gelu_tanh": ([((6,), -3.0, 3.0)], gelu_tanh),
    "sum": ([(2, 3, 4)], lambda x: x.sum(dim=(0, 2))),
    "mean": ([(2, 3, 4)], lambda x: x.mean(dim=1, keepdim=True)),
    "reduce_max": ([(3, 4)], lambda x: x.amax(dim=1)),
    "reshape": ([(2, 6)], lambda x: x.reshape(3, 4)),
    "transpose": ([(2, 3, 4)], lambda x: x.permute(2, 0, 1)),
    "slice": ([(4, 5)], lambda x: x[:, 1:4]),
    "pad": ([(2, 3)], lambda x: F.pad(x, (0, 2, 1, 0))),
    "concat": ([(2, 3), (2, 2)], lambda a, b: torch.cat([a, b], dim=1)),
    "broadcast_to": ([(3, 1)], lambda x: x.expand(2, 3, 4)),
    "matmul": ([(3, 4), (4, 2)], torch.matmul),
    "batched_matmul": ([(2, 3, 4), (4, 5)], torch.matmul),
    "softmax": ([(3, 5)], lambda x: torch.softmax(x, dim=1)),
    "log_softmax": ([(3, 5)], lambda x: torch.log_softmax(x, dim=-1)),
    "layer_norm": ([(3, 6)], lambda x: F.layer_norm(x, (6,), eps=1e-5)),
    "gather": ([(5, 3)], lambda t: F.embedding(ids([4, 0, 4, 2], (2, 2)), t)),
    "one_hot_matmul": ([(4, 3)], lambda x: F.one_hot(ids([3, 0], (2,)), 4).float() @ x),
    "cross_entropy": ([(4, 6)], lambda x: cross_entropy(x, ids([5, 0, 2, 2], (4,)))),
    # The convolutional layers csrun lowers to slices and products (lib/nn/convolution.cpp).
    "conv2d": ([(2, 3, 5, 5), (4, 3, 3, 3)], lambda x, w: F.conv2d(x, w, padding=1)),
    "conv2d_strided": ([(1, 2, 6, 5), (3, 2, 3, 3)], lambda x, w: F.conv2d(x, w, stride=2, padding=1)),
    "conv2d_1x1": ([(2, 3, 4, 4), (2, 3, 1, 1)], lambda x, w: F.conv2d(x, w)),
    "conv3d_strided": ([(1, 2, 4, 4, 4), (2, 2, 3, 3, 3)], lambda x, w: F.conv3d(x, w, stride=2, padding=1)),
    "conv_transpose2d": ([(2, 3, 3, 2), (3, 2, 2, 2)], lambda x, w: F.conv_transpose2d(x, w, stride=2)),
    "conv_transpose3d": ([(1, 2, 2, 2, 2), (2, 3, 2, 2, 2)], lambda x, w: F.conv_transpose3d(x, w, stride=2)),
    "max_pool2d": ([(2, 3, 5, 4)], lambda x: F.max_pool2d(x, 2)),
    "max_pool3d": ([(1, 2, 4, 4, 4)], lambda x: F.max_pool3d(x, 2)),
    "group_norm": ([(2, 4, 3, 3)], lambda x: F.group_norm(x, 2, eps=1e-5)),
    "batch_norm": ([(3, 2, 2, 3)], lambda x: F.batch_norm(x, None, None, training=True, eps=1e-5)),
}


# Computed in float64 from the same float32 inputs: a convolution's output sums up to 54
# products, whose float32 rounding in PyTorch alone exceeds 1e-5 of its small values.
FLOAT64 = {"conv2d", "conv2d_strided", "conv2d_1x1", "conv3d_strided", "conv_transpose2d", "conv_transpose3d"}


def main():
    cases = []
    for name, (specs, op) in CASES.items():
        inputs = []
        for i, spec in enumerate(specs):
            shape, low, high = (spec, -1.0, 1.0) if isinstance(spec[0], int) else spec
            x = tensor(f"{name}.input{i}", shape, low, high)
            inputs.append((x.double() if name in FLOAT64 else x).requires_grad_())
        output = op(*inputs)
        weights = tensor(f"{name}.weights", output.shape).to(output.dtype)
        (output * weights).sum().backward()
        cases.append({
            "name": name,
            "inputs": [{"shape": list(x.shape), "values": x.detach().reshape(-1).tolist()} for x in inputs],
            "weights": weights.reshape(-1).tolist(),
            "output": {"shape": list(output.shape), "values": output.detach().reshape(-1).tolist()},
            "gradients": [x.grad.reshape(-1).tolist() for x in inputs],
        })
    write("ops.json", {"torch": torch.__version__, "dtype": "float32", "cases": cases})


if __name__ == "__main__":
    main()
