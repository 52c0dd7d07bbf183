"""Shared by the golden-value scripts: deterministic values both PyTorch and csrun's tests make.

value(stream, index) is a pure function of a string and an index (FNV-1a of the string, mixed
with SplitMix64), identical to csrun's test/support/golden.hpp, so initial weights and batches
need not be stored: each side makes the same ones.
"""
import json
import os

MASK = (1 << 64) - 1


def fnv1a(text):
    h = 0xCBF29CE484222325
    for byte in text.encode():
        h ^= byte
        h = (h * 0x100000001B3) & MASK
    return h


def mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def mix_keys(a, b):
    return mix64(a ^ mix64(b))


def value(stream, index):
    """A uniform number in [0, 1)."""
    return (mix64(mix_keys(fnv1a(stream), index)) >> 11) * 2.0 ** -53


def values(stream, count):
    key = fnv1a(stream)
    return [(mix64(mix_keys(key, i)) >> 11) * 2.0 ** -53 for i in range(count)]


def initial_weight(name, count):
    """The starting values csrun's golden tests give the parameter `name`."""
    u = values(name, count)
    if name.endswith(".bias"):
        return [0.05 * (2 * x - 1) for x in u]
    if "norm" in name or "ln_f" in name:
        return [1.0 + 0.1 * (2 * x - 1) for x in u]
    return [0.1 * (2 * x - 1) for x in u]


def output_path(name):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "data", "golden")
    os.makedirs(root, exist_ok=True)
    return os.path.join(root, name)


def write(name, document):
    with open(output_path(name), "w") as out:
        json.dump(document, out, indent=1)
        out.write("\n")
    print("wrote", output_path(name))
