#!/usr/bin/python3
"""Golden learning rates of each LR schedule over its first 300 steps.

Where PyTorch has a scheduler with the same semantics as the Cerebras one (LinearLR,
ExponentialLR, PolynomialLR, CosineAnnealingLR, CosineAnnealingWarmRestarts, StepLR,
MultiStepLR, MultiplicativeLR, CyclicLR and OneCycleLR without momentum cycling, SequentialLR,
ChainedScheduler), PyTorch computes the values by stepping it. The Cerebras-only schedules
(CosineDecayLR, InverseSquareRootDecayLR, InverseExponentialTimeDecayLR, PiecewiseConstantLR,
LambdaLR's fixed functions, staircase and cycling variants) use the closed forms of
cerebras.pytorch.optim.lr_scheduler, written out below. `spec` is the trainer-format entry csrun
reads. Run with Debian's python3-torch: /usr/bin/python3 scripts/golden/schedules.py
"""
import math

import torch
from torch.optim import lr_scheduler as S

from golden_common import write

STEPS = 300


def stepped(base_lr, make):
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=base_lr)
    scheduler = make(optimizer)
    rates = []
    for _ in range(STEPS):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def closed(form):
    return [form(step) for step in range(STEPS)]


def cosine_decay(initial, end, total):
    return lambda s: end + 0.5 * (initial - end) * (1 + math.cos(math.pi * min(s, total) / total))


CASES = [
    ("ConstantLR", {"ConstantLR": {"learning_rate": 0.1}}, closed(lambda s: 0.1)),
    ("LinearLR", {"LinearLR": {"initial_learning_rate": 0.1, "end_learning_rate": 0.01, "total_iters": 100}},
     stepped(0.1, lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=100))),
    ("ExponentialLR", {"ExponentialLR": {"initial_learning_rate": 0.1, "total_iters": 10, "decay_rate": 0.5}},
     stepped(0.1, lambda o: S.ExponentialLR(o, gamma=0.5 ** 0.1))),
    ("ExponentialLR staircase",
     {"ExponentialLR": {"initial_learning_rate": 0.1, "total_iters": 10, "decay_rate": 0.5, "staircase": True}},
     closed(lambda s: 0.1 * 0.5 ** (s // 10))),
    ("InverseExponentialTimeDecayLR",
     {"InverseExponentialTimeDecayLR": {"initial_learning_rate": 0.1, "step_exponent": 1.0, "total_iters": 20,
                                        "decay_rate": 0.5}},
     closed(lambda s: 0.1 / (1 + 0.5 * (s ** 1.0 / 20)))),
    ("InverseExponentialTimeDecayLR staircase",
     {"InverseExponentialTimeDecayLR": {"initial_learning_rate": 0.1, "step_exponent": 2.0, "total_iters": 400,
                                        "decay_rate": 0.5, "staircase": True}},
     closed(lambda s: 0.1 / (1 + 0.5 * math.floor(s ** 2.0 / 400)))),
    ("InverseSquareRootDecayLR",
     {"InverseSquareRootDecayLR": {"initial_learning_rate": 0.5, "scale": 2.0, "warmup_steps": 25}},
     closed(lambda s: 0.5 * 2.0 / math.sqrt(max(s, 25)))),
    ("PolynomialLR", {"PolynomialLR": {"initial_learning_rate": 0.1, "end_learning_rate": 0.0, "total_iters": 100,
                                       "power": 2.0}},
     stepped(0.1, lambda o: S.PolynomialLR(o, total_iters=100, power=2.0))),
    ("PolynomialLR cycle",
     {"PolynomialLR": {"initial_learning_rate": 0.1, "end_learning_rate": 0.01, "total_iters": 40, "power": 1.0,
                       "cycle": True}},
     closed(lambda s: (0.1 - 0.01) * (1 - s / (40 * max(1, math.ceil(s / 40)))) + 0.01)),
    ("CosineDecayLR", {"CosineDecayLR": {"initial_learning_rate": 0.1, "end_learning_rate": 0.001, "total_iters": 100}},
     closed(cosine_decay(0.1, 0.001, 100))),
    ("CosineAnnealingLR", {"CosineAnnealingLR": {"initial_learning_rate": 0.1, "T_max": 50, "eta_min": 0.001}},
     stepped(0.1, lambda o: S.CosineAnnealingLR(o, T_max=50, eta_min=0.001))),
    ("CosineAnnealingWarmRestarts",
     {"CosineAnnealingWarmRestarts": {"initial_learning_rate": 0.1, "T_0": 10, "T_mult": 2, "eta_min": 0.001}},
     stepped(0.1, lambda o: S.CosineAnnealingWarmRestarts(o, T_0=10, T_mult=2, eta_min=0.001))),
    ("CosineAnnealingWarmRestarts T_mult 1",
     {"CosineAnnealingWarmRestarts": {"initial_learning_rate": 0.1, "T_0": 30, "eta_min": 0.0}},
     stepped(0.1, lambda o: S.CosineAnnealingWarmRestarts(o, T_0=30))),
    ("StepLR", {"StepLR": {"initial_learning_rate": 0.1, "step_size": 30, "gamma": 0.5}},
     stepped(0.1, lambda o: S.StepLR(o, step_size=30, gamma=0.5))),
    ("MultiStepLR", {"MultiStepLR": {"initial_learning_rate": 0.1, "gamma": 0.1, "milestones": [50, 120]}},
     stepped(0.1, lambda o: S.MultiStepLR(o, milestones=[50, 120], gamma=0.1))),
    ("PiecewiseConstantLR", {"PiecewiseConstantLR": {"learning_rates": [0.1, 0.05, 0.01], "milestones": [40, 160]}},
     closed(lambda s: 0.1 if s < 40 else 0.05 if s < 160 else 0.01)),
    ("LambdaLR", {"LambdaLR": {"initial_learning_rate": 0.5}},
     closed(lambda s: 0.5 * (s / 30) * 0.5 * 0.95 ** s)),
    ("MultiplicativeLR", {"MultiplicativeLR": {"initial_learning_rate": 0.1, "coefficient": 0.99}},
     stepped(0.1, lambda o: S.MultiplicativeLR(o, lr_lambda=lambda _: 0.99))),
    ("CyclicLR",
     {"CyclicLR": {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 40, "step_size_down": 60}},
     stepped(0.01, lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=40, step_size_down=60,
                                        cycle_momentum=False))),
    ("CyclicLR triangular2",
     {"CyclicLR": {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 25, "mode": "triangular2"}},
     stepped(0.01, lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=25, mode="triangular2",
                                        cycle_momentum=False))),
    ("CyclicLR exp_range",
     {"CyclicLR": {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 30, "mode": "exp_range", "gamma": 0.995}},
     stepped(0.01, lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=30, mode="exp_range",
                                        gamma=0.995, cycle_momentum=False))),
    ("OneCycleLR",
     {"OneCycleLR": {"initial_learning_rate": 0.004, "max_lr": 0.1, "total_steps": 300, "pct_start": 0.25}},
     stepped(0.004, lambda o: S.OneCycleLR(o, max_lr=0.1, total_steps=300, pct_start=0.25, div_factor=25,
                                          cycle_momentum=False))),
    ("OneCycleLR linear three_phase",
     {"OneCycleLR": {"initial_learning_rate": 0.004, "max_lr": 0.1, "total_steps": 300, "pct_start": 0.2,
                     "final_div_factor": 100.0, "three_phase": True, "anneal_strategy": "linear"}},
     stepped(0.004, lambda o: S.OneCycleLR(o, max_lr=0.1, total_steps=300, pct_start=0.2, div_factor=25,
                                          final_div_factor=100.0, three_phase=True, anneal_strategy="linear",
                                          cycle_momentum=False))),
    ("SequentialLR",
     {"SequentialLR": {"schedulers": [
         {"LinearLR": {"initial_learning_rate": 0.01, "end_learning_rate": 0.1, "total_iters": 50}},
         {"StepLR": {"initial_learning_rate": 0.1, "step_size": 40, "gamma": 0.5}}]}},
     stepped(0.1, lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=50),
                                               S.StepLR(o, step_size=40, gamma=0.5)], milestones=[50]))),
    ("SequentialLR warm-up and decay",
     {"SequentialLR": {"schedulers": [
         {"LinearLR": {"initial_learning_rate": 0.0, "end_learning_rate": 0.1, "total_iters": 50}},
         {"CosineDecayLR": {"initial_learning_rate": 0.1, "end_learning_rate": 0.01, "total_iters": 200}}]}},
     closed(lambda s: 0.1 * s / 50 if s < 50 else cosine_decay(0.1, 0.01, 200)(s - 50))),
    ("ChainedScheduler",
     {"ChainedScheduler": {"schedulers": [
         {"StepLR": {"initial_learning_rate": 0.1, "step_size": 30, "gamma": 0.5}},
         {"ExponentialLR": {"initial_learning_rate": 1.0, "total_iters": 1, "decay_rate": 0.99}}]}},
     stepped(0.1, lambda o: S.ChainedScheduler([S.StepLR(o, step_size=30, gamma=0.5), S.ExponentialLR(o, gamma=0.99)]))),
    # The Model Zoo divides a further member by its initial_learning_rate, not by its rate at step 0.
    ("ChainedScheduler relative to initial_learning_rate",
     {"ChainedScheduler": {"schedulers": [
         {"StepLR": {"initial_learning_rate": 0.1, "step_size": 30, "gamma": 0.5}},
         {"InverseSquareRootDecayLR": {"initial_learning_rate": 2.0, "scale": 1.0, "warmup_steps": 4}}]}},
     closed(lambda s: 0.1 * 0.5 ** (s // 30) * (2.0 / math.sqrt(max(s, 4))) / 2.0)),
]


def main():
    write("schedules.json", {"torch": torch.__version__, "steps": STEPS,
                             "cases": [{"name": n, "spec": spec, "rates": rates} for n, spec, rates in CASES]})


if __name__ == "__main__":
    main()
