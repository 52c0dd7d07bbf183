"""GPT-2 small's network (the gpt2_small_ish workload of ../shared/bench/torch_baseline.py) at a
longer sequence and a chosen depth, batch 2, AdamW, in f32 or under PyTorch's bfloat16 autocast on
the CPU: its own timing, the baseline's model and training step, called as a library. Prints one
JSON line: samples/s (the median of the steps after the first) and the process's peak RSS.

Usage: torch_gpt2_long.py BASELINE_SCRIPT --msl N --layers N [--bf16] [--threads N] [--steps N]
"""
import argparse
import json
import resource
import statistics
import sys
import time

import torch_baseline_module


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("baseline", help="path of ../shared/bench/torch_baseline.py")
    ap.add_argument("--msl", type=int, required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--bf16", action="store_true", help="bfloat16 autocast (else f32)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="steps, the first one untimed")
    args = ap.parse_args()
    baseline = torch_baseline_module.load(args.baseline, args.threads)
    torch = baseline.torch
    torch.manual_seed(0)
    config = dict(baseline.LM_CONFIGS["gpt2_small_ish"], max_seq=args.msl, n_layer=args.layers)
    model = baseline.GPT(**config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    tokens = torch.randint(0, config["vocab"], (2, args.msl + 1))
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    autocast = torch.bfloat16 if args.bf16 else None
    seconds = []
    for _ in range(args.steps):
        start = time.perf_counter()
        baseline.train_step(model, optimizer, x, y, autocast)
        seconds.append(time.perf_counter() - start)
    step = statistics.median(seconds[1:]) if len(seconds) > 1 else seconds[0]
    json.dump({"samples_per_s": 2 / step,
               "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
