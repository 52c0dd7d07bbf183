"""GPT-2 small (the gpt2_small_ish workload of ../shared/bench/torch_baseline.py: MSL 256,
batch 2, AdamW) under PyTorch's bfloat16 autocast on the CPU, which that script's selection
lacks: its own model, data and timing, called as a library. Prints one JSON line, as it does.

Usage: torch_gpt2_small_bf16.py BASELINE_SCRIPT [--threads N] [--steps N]
"""
import argparse
import json
import sys

import torch_baseline_module


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("baseline", help="path of ../shared/bench/torch_baseline.py")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="timed steps")
    args = ap.parse_args()
    baseline = torch_baseline_module.load(args.baseline, args.threads)
    settings = argparse.Namespace(seed=0, warmup_s=0.0, window_s=1.5, windows=1,
                                  big_steps=args.steps)
    result = baseline.bench_workload("gpt2_small_ish", 2, "bf16_autocast", settings)
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
