"""PyTorch's side of scripts/bench.sh's checkpoint section: the same GPT-2 small + Adam state
as bench/checkpoint_io.cpp, saved with torch.save plus fsync and loaded cold with torch.load.

Usage: torch_checkpoint.py DIRECTORY [ROUNDS]"""
import os
import sys
import time

import torch


def gpt2_small_with_adam():
    shapes = {"transformer.wte.weight": (50257, 768), "transformer.wpe.weight": (1024, 768)}
    for layer in range(12):
        block = f"transformer.h.{layer}."
        for norm in ("ln_1.", "ln_2."):
            shapes[block + norm + "weight"] = (768,)
            shapes[block + norm + "bias"] = (768,)
        shapes.update({block + "attn.c_attn.weight": (768, 2304), block + "attn.c_attn.bias": (2304,),
                       block + "attn.c_proj.weight": (768, 768), block + "attn.c_proj.bias": (768,),
                       block + "mlp.c_fc.weight": (768, 3072), block + "mlp.c_fc.bias": (3072,),
                       block + "mlp.c_proj.weight": (3072, 768), block + "mlp.c_proj.bias": (768,)})
    state = {}
    for name, shape in shapes.items():
        for prefix in ("model.", "optimizer.state.exp_avg.", "optimizer.state.exp_avg_sq."):
            state[prefix + name] = torch.full(shape, 0.25)
    state["global_step"] = torch.tensor(5)
    return state


def main():
    directory = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    path = os.path.join(directory, "checkpoint_5.pt")
    state = gpt2_small_with_adam()
    for _ in range(rounds):
        start = time.perf_counter()
        with open(path, "wb") as file:
            torch.save(state, file)
            file.flush()
            os.fsync(file.fileno())
        write = time.perf_counter() - start
        gigabytes = os.path.getsize(path) / 1e9
        descriptor = os.open(path, os.O_RDONLY)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(descriptor)
        start = time.perf_counter()
        torch.load(path)
        load = time.perf_counter() - start
        print(f"torch: {gigabytes:.2f} GB, write+fsync {write:.2f} s ({gigabytes / write:.2f} GB/s), "
              f"cold read {load:.2f} s ({gigabytes / load:.2f} GB/s)")
        os.remove(path)


if __name__ == "__main__":
    main()
