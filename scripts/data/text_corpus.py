#!/usr/bin/env python3
"""Turns plain-text documents into csrun's tiny language-model datasets.

GPT (byte-level): every document's UTF-8 bytes are token ids 0..255. Windows of MSL + 1 bytes,
MSL / 4 apart in training (MSL apart for validation), give one example each: input_ids = the first MSL bytes, labels = the next-byte
targets, attention_mask all ones. They are written as raw little-endian int32 rows [n, 3, MSL]
(ROWS files) that csrun-gpt-hdf5 converts to the Model Zoo's GPT HDF5 layout.

BERT (word-level): lower-cased words, numbers and punctuation marks; the vocabulary holds the
special tokens and every token seen at least twice in the training documents. Examples are
[CLS] A [SEP] B [SEP] with A and B runs of sentences, B the true continuation half the time and a
sentence of another document otherwise (is_random_next), written as the Model Zoo's BERT CSV
files (columns tokens, segment_ids, is_random_next) with meta.dat and vocab.txt.

The last tenth of every document goes to the validation split, the rest to training.

Usage: text_corpus.py OUTPUT_DIR DOCUMENT...
Only the Python standard library is used; the output depends on the documents only.
"""
import collections
import csv
import os
import random
import re
import struct
import sys

GPT_LENGTH = 128
BERT_LENGTH = 64
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORD = re.compile(r"[a-z]+|[0-9]+|[^\sa-z0-9]")


def split_document(text):
    cut = int(len(text) * 0.9)
    return text[:cut], text[cut:]


def write_gpt_rows(path, texts, stride):
    examples = 0
    with open(path, "wb") as out:
        for text in texts:
            data = text.encode("utf-8")
            for start in range(0, len(data) - GPT_LENGTH, stride):
                window = data[start:start + GPT_LENGTH + 1]
                values = list(window[:-1]) + [1] * GPT_LENGTH + list(window[1:])
                out.write(struct.pack("<%di" % len(values), *values))
                examples += 1
    return examples


def sentences(text):
    """Lists of tokens, one per sentence (split after '.', ';', ':' or a blank line)."""
    result = []
    for paragraph in re.split(r"\n\s*\n", text.lower()):
        for sentence in re.split(r"(?<=[.;:])\s+", paragraph):
            tokens = WORD.findall(sentence)
            if tokens:
                result.append(tokens)
    return result


def bert_examples(documents, rng):
    budget = BERT_LENGTH - 3
    examples = []
    for index, document in enumerate(documents):
        at = 0
        while at < len(document) - 1:
            first = []
            while at < len(document) - 1 and len(first) + len(document[at]) <= budget // 2:
                first += document[at]
                at += 1
            if not first:
                first = document[at][:budget // 2]
                at += 1
            others = [d for i, d in enumerate(documents) if i != index and d]
            random_next = bool(others) and rng.random() < 0.5
            source = rng.choice(others) if random_next else document
            start = rng.randrange(len(source)) if random_next else at
            second = []
            while start < len(source) and len(first) + len(second) + len(source[start]) <= budget:
                second += source[start]
                start += 1
            if not second:
                second = source[min(start, len(source) - 1)][:budget - len(first)]
            tokens = ["[CLS]"] + first + ["[SEP]"] + second + ["[SEP]"]
            segments = [0] * (len(first) + 2) + [1] * (len(second) + 1)
            examples.append((tokens, segments, int(random_next)))
    return examples


def write_bert(directory, examples):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "part-0.csv"), "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["tokens", "segment_ids", "is_random_next"])
        for tokens, segments, random_next in examples:
            writer.writerow([repr(tokens), repr(segments), random_next])
    with open(os.path.join(directory, "meta.dat"), "w") as meta:
        meta.write("part-0.csv %d\n" % len(examples))


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: text_corpus.py OUTPUT_DIR DOCUMENT...")
    out = sys.argv[1]
    texts = []
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8", errors="replace") as document:
            texts.append(document.read())
    train, val = zip(*(split_document(t) for t in texts))

    os.makedirs(os.path.join(out, "gpt"), exist_ok=True)
    for name, split, stride in (("train", train, GPT_LENGTH // 4), ("val", val, GPT_LENGTH)):
        count = write_gpt_rows(os.path.join(out, "gpt", name + ".rows"), split, stride)
        print("gpt %s: %d examples of %d bytes" % (name, count, GPT_LENGTH))

    rng = random.Random(1)
    train_sentences = [sentences(t) for t in train]
    counts = collections.Counter(w for d in train_sentences for s in d for w in s)
    vocab = SPECIAL + sorted(w for w, c in counts.items() if c >= 2)
    os.makedirs(os.path.join(out, "bert"), exist_ok=True)
    with open(os.path.join(out, "bert", "vocab.txt"), "w") as v:
        v.write("\n".join(vocab) + "\n")
    for name, split in (("train", train_sentences), ("val", [sentences(t) for t in val])):
        examples = bert_examples(split, rng)
        write_bert(os.path.join(out, "bert", name), examples)
        print("bert %s: %d examples, vocabulary of %d tokens" % (name, len(examples), len(vocab)))


if __name__ == "__main__":
    main()
