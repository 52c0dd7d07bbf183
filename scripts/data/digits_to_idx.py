#!/usr/bin/env python3
"""Converts the UCI optical digits (scikit-learn's digits.csv.gz) to MNIST IDX files.

Each 8x8 image (pixel counts 0..16) is scaled to 20x20 with bilinear interpolation and centred
in a 28x28 frame, as MNIST centres its digits, with grey levels 0..255. Every fifth sample goes
to the validation split (t10k-*), the rest to the training split (train-*), so the split is
deterministic and balanced across the file.

Usage: digits_to_idx.py DIGITS_CSV_GZ OUTPUT_DIR
Only the Python standard library is used.
"""
import csv
import gzip
import io
import os
import struct
import sys

SOURCE = 8
DIGIT = 20
FRAME = 28
OFFSET = (FRAME - DIGIT) // 2


def upsample(pixels):
    """8x8 counts (0..16) -> 28x28 bytes, bilinear, digit centred in a 20x20 box."""
    frame = bytearray(FRAME * FRAME)
    scale = (SOURCE - 1) / (DIGIT - 1)
    for y in range(DIGIT):
        sy = y * scale
        y0 = int(sy)
        y1 = min(y0 + 1, SOURCE - 1)
        fy = sy - y0
        for x in range(DIGIT):
            sx = x * scale
            x0 = int(sx)
            x1 = min(x0 + 1, SOURCE - 1)
            fx = sx - x0
            top = pixels[y0 * SOURCE + x0] * (1 - fx) + pixels[y0 * SOURCE + x1] * fx
            bottom = pixels[y1 * SOURCE + x0] * (1 - fx) + pixels[y1 * SOURCE + x1] * fx
            value = top * (1 - fy) + bottom * fy
            frame[(y + OFFSET) * FRAME + x + OFFSET] = min(255, round(value * 255 / 16))
    return bytes(frame)


def write_split(directory, prefix, samples):
    with open(os.path.join(directory, prefix + "-images-idx3-ubyte"), "wb") as images:
        images.write(struct.pack(">IIII", 0x803, len(samples), FRAME, FRAME))
        for image, _ in samples:
            images.write(image)
    with open(os.path.join(directory, prefix + "-labels-idx1-ubyte"), "wb") as labels:
        labels.write(struct.pack(">II", 0x801, len(samples)))
        labels.write(bytes(label for _, label in samples))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    source, directory = sys.argv[1], sys.argv[2]
    with gzip.open(source, "rt") as text:
        rows = [row for row in csv.reader(io.StringIO(text.read())) if row]
    train, val = [], []
    for index, row in enumerate(rows):
        values = [int(float(v)) for v in row]
        if len(values) != SOURCE * SOURCE + 1 or not 0 <= values[-1] <= 9:
            sys.exit(f"{source}: row {index + 1} is not 64 pixels and a label")
        sample = (upsample(values[:-1]), values[-1])
        (val if index % 5 == 4 else train).append(sample)
    os.makedirs(directory, exist_ok=True)
    write_split(directory, "train", train)
    write_split(directory, "t10k", val)
    print(f"wrote {len(train)} training and {len(val)} validation digits to {directory}")


if __name__ == "__main__":
    main()
