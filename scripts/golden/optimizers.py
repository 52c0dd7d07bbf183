#!/usr/bin/python3
"""Golden weights of the optimizers the Model Zoo ports from PyTorch, over eight steps.

A parameter w = [1, -2] takes the gradients below (csrun's test feeds them as the gradient of
sum(w * x)); PyTorch's optimizers compute the weights after each step (Debian's torch 1.13, whose
NAdam counts mu twice in its momentum's divisor as the Model Zoo's NAdam does). Lion, which torch.optim
does not have, is cerebras.pytorch's closed form, written out. `spec` is the trainer-format
optimizer entry csrun reads. Run with Debian's python3-torch: /usr/bin/python3
scripts/golden/optimizers.py
"""
import torch

from golden_common import write

GRADIENTS = [[0.5, 1.0], [-0.3, 0.2], [0.8, -0.6], [0.1, 0.4], [-0.7, 0.3], [0.2, -0.9], [0.6, 0.6],
             [-0.4, -0.1]]


def stepped(make):
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0], dtype=torch.float64))
    optimizer = make([w])
    weights = []
    for gradient in GRADIENTS:
        w.grad = torch.tensor(gradient, dtype=torch.float64)
        optimizer.step()
        weights.append(w.detach().tolist())
    return weights


def lion(lr, betas, weight_decay):
    w = torch.tensor([1.0, -2.0], dtype=torch.float64)
    m = torch.zeros(2, dtype=torch.float64)
    weights = []
    for gradient in GRADIENTS:
        g = torch.tensor(gradient, dtype=torch.float64)
        w = w * (1 - lr * weight_decay)
        w = w - lr * torch.sign(betas[0] * m + (1 - betas[0]) * g)
        m = betas[1] * m + (1 - betas[1]) * g
        weights.append(w.tolist())
    return weights


O = torch.optim
CASES = [
    ("RMSprop", {"RMSprop": {"lr": 0.01}}, stepped(lambda p: O.RMSprop(p, lr=0.01))),
    ("RMSprop centered, momentum, weight decay",
     {"RMSprop": {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True, "weight_decay": 0.1}},
     stepped(lambda p: O.RMSprop(p, lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.1))),
    ("Adagrad", {"Adagrad": {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.5, "weight_decay": 0.1}},
     stepped(lambda p: O.Adagrad(p, lr=0.1, lr_decay=0.01, initial_accumulator_value=0.5, weight_decay=0.1))),
    ("Adamax", {"Adamax": {"lr": 0.02, "weight_decay": 0.1}},
     stepped(lambda p: O.Adamax(p, lr=0.02, weight_decay=0.1))),
    ("Adadelta", {"Adadelta": {"lr": 1.0, "rho": 0.9, "weight_decay": 0.1}},
     stepped(lambda p: O.Adadelta(p, lr=1.0, rho=0.9, weight_decay=0.1))),
    ("Adadelta maximize", {"Adadelta": {"lr": 0.5, "maximize": True}},
     stepped(lambda p: O.Adadelta(p, lr=0.5, maximize=True))),
    ("NAdam", {"NAdam": {"lr": 0.01, "weight_decay": 0.1}},
     stepped(lambda p: O.NAdam(p, lr=0.01, weight_decay=0.1))),
    # beta2 0.8: rho_t passes 5 at the seventh step, so both of RAdam's branches run.
    ("RAdam", {"RAdam": {"lr": 0.01, "betas": [0.9, 0.8], "weight_decay": 0.1}},
     stepped(lambda p: O.RAdam(p, lr=0.01, betas=(0.9, 0.8), weight_decay=0.1))),
    ("Lion", {"Lion": {"lr": 0.01, "weight_decay": 0.5}}, lion(0.01, (0.9, 0.99), 0.5)),
]


def main():
    write("optimizers.json", {"torch": torch.__version__, "gradients": GRADIENTS,
                              "cases": [{"name": n, "spec": spec, "weights": w} for n, spec, w in CASES]})


if __name__ == "__main__":
    main()
