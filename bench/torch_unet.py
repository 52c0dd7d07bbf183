#!/usr/bin/python3
"""PyTorch's side of scripts/bench.sh's unet section: the Model Zoo's 2D UNet (ConvNormActBlock =
Conv2d "same", norm, ReLU; UNetBlock; max pooling; ConvTranspose2d(2, 2) upsampling concatenated
with the skip; a final 1x1 conv; the Model Zoo's binary cross-entropy with logits) trained with
Adam on random images and masks, as csrun trains configs/unet_tiny.yaml or a Model Zoo UNet
config: in float32, or (--autocast) in bfloat16 autocast as the Model Zoo's mixed precision; with
--classes N > 1, N logits a pixel and the sparse softmax cross-entropy ("ssce"). Prints one JSON
line: samples/s (median over the timed steps after two warm-up steps).

Usage: bench/torch_unet.py --size 32 --channels 1 --batch 16 --encoder 8 16 32 --decoder 16 8
           --norm group --groups 4 --steps 40 [--width W] [--classes N] [--bias] [--autocast]
           [--threads N]
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn


class InFloat32(nn.Module):
    """A norm computed in float32, as CUDA's autocast does (PyTorch 1.13's CPU autocast leaves
    group_norm to fail on a bfloat16 input)."""

    def __init__(self, norm):
        super().__init__()
        self.norm = norm

    def forward(self, x):
        return self.norm(x.float())


def conv_norm_act(in_channels, out_channels, args):
    layers = [nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=args.bias)]
    if args.norm == "group":
        layers.append(InFloat32(nn.GroupNorm(args.groups, out_channels)))
    elif args.norm == "batch":
        layers.append(InFloat32(nn.BatchNorm2d(out_channels)))
    layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def block(in_channels, out_channels, args):
    return nn.Sequential(conv_norm_act(in_channels, out_channels, args),
                         conv_norm_act(out_channels, out_channels, args))


class UNet(nn.Module):
    def __init__(self, args):
        super().__init__()
        encoder, decoder = args.encoder, args.decoder
        self.encoder = nn.ModuleList()
        channels = args.channels
        for filters in encoder[:-1]:
            self.encoder.append(block(channels, filters, args))
            channels = filters
        self.bottleneck = block(encoder[-2], encoder[-1], args)
        self.upsample = nn.ModuleList()
        self.decoder = nn.ModuleList()
        channels = encoder[-1]
        for j, filters in enumerate(decoder):
            self.upsample.append(nn.ConvTranspose2d(channels, filters, 2, stride=2, bias=args.bias))
            self.decoder.append(block(filters + encoder[-2 - j], filters, args))
            channels = filters
        self.final = nn.Conv2d(channels, args.classes, 1)

    def forward(self, x):
        skips = []
        for layer in self.encoder:
            x = layer(x)
            skips.append(x)
            x = nn.functional.max_pool2d(x, 2)
        x = self.bottleneck(x)
        for upsample, layer, skip in zip(self.upsample, self.decoder, reversed(skips)):
            x = layer(torch.cat([upsample(x), skip], dim=1))
        return self.final(x)


def bce(logits, labels):
    m = torch.relu(-logits)
    return ((1 - labels) * logits + m + torch.log(torch.exp(-m) + torch.exp(-logits - m))).mean()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=32, help="image height (and width)")
    parser.add_argument("--width", type=int, default=0, help="image width where not --size")
    parser.add_argument("--channels", type=int, default=1)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--encoder", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--decoder", type=int, nargs="+", default=[16, 8])
    parser.add_argument("--norm", choices=["group", "batch", "none"], default="group")
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--classes", type=int, default=1)
    parser.add_argument("--bias", action="store_true", help="biases in the convolutions")
    parser.add_argument("--autocast", action="store_true", help="bfloat16 autocast")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    args.bias = args.bias or args.norm == "none"
    width = args.width or args.size
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = UNet(args)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    images = torch.rand(args.batch, args.channels, args.size, width) * 2 - 1
    if args.classes > 1:
        masks = torch.randint(args.classes, (args.batch, args.size, width))
        loss_of = lambda logits: nn.functional.cross_entropy(logits.float(), masks)
    else:
        masks = (torch.rand(args.batch, 1, args.size, width) > 0.5).float()
        loss_of = lambda logits: bce(logits.float(), masks)
    times = []
    for step in range(args.steps + 2):
        start = time.perf_counter()
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast):
            loss = loss_of(model(images))
        loss.backward()
        optimizer.step()
        if step >= 2:
            times.append(time.perf_counter() - start)
    print(json.dumps({"kind": "train", "samples_per_s": args.batch / statistics.median(times),
                      "loss": loss.item()}))


if __name__ == "__main__":
    main()
