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

Fine-tuning sets for the BERT heads, in the layouts of the Model Zoo's processors, from the same
sentences and vocabulary:
- glue (SST2DataProcessor: train.tsv, dev.tsv with columns sentence, label): a sentence and
  whether it comes from a GNU license (GPL, LGPL, GFDL: 1) or another one (0), the classes
  balanced;
- ner (BertTokenClassifierDataProcessor: meta.dat, CSV columns tokens, labels, label2id.json):
  [CLS] sentence [SEP] with the numbers (runs of digits joined by '.' or ',', such as a version or
  a section number) tagged B for their first token and I for the others, O elsewhere;
- bertsum (BertSumCSVDataProcessor: meta.dat, CSV columns input_token_ids, labels, segment_ids,
  cls_ids): runs of up to 8 sentences, [CLS] sentence [SEP] each, labeled 1 when the sentence
  speaks of warranty or liability (the sentences a license summary keeps) and 0 otherwise.

Encoder-decoder sets, word-level with the vocabulary above (T5's special tokens <pad>, <unk>, <s>,
</s> first), in seq2seq/vocab.txt:
- t5 (T5DynamicDataProcessor: meta.dat listing part-0.txt, one paragraph a line as
  space-separated tokens), which csrun corrupts into spans and sentinels as it reads;
- transformer (TransformerDynamicDataProcessor: meta.dat listing source.txt and target.txt, one
  sentence a line): a made-up translation task, every sentence of up to 30 tokens into its
  words in reverse order.

The last tenth of every document goes to the validation split, the rest to training.

Usage: text_corpus.py OUTPUT_DIR DOCUMENT...
Only the Python standard library is used; the output depends on the documents only.
"""
import collections
import csv
import json
import os
import random
import re
import struct
import sys

GPT_LENGTH = 128
BERT_LENGTH = 64
FINETUNE_LENGTH = 64
SUMMARY_LENGTH = 128
SUMMARY_SENTENCES = 8
NER_LABELS = {"[PAD]": 0, "B": 1, "I": 2, "O": 3, "X": 4, "[CLS]": 5, "[SEP]": 6}
SUMMARY_WORDS = {"warranty", "warranties", "liability", "liable", "damages"}
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


def write_glue(directory, name, labeled):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "w") as out:
        out.write("sentence\tlabel\n")
        for tokens, label in labeled:
            out.write("%s\t%d\n" % (" ".join(tokens), label))


def glue_examples(documents, gnu, rng):
    """Sentences with their license family, as many of each class."""
    by_class = {0: [], 1: []}
    for tokens_list, is_gnu in zip(documents, gnu):
        for tokens in tokens_list:
            if 3 <= len(tokens) <= FINETUNE_LENGTH - 2:
                by_class[int(is_gnu)].append(tokens)
    count = min(len(by_class[0]), len(by_class[1]))
    labeled = [(t, label) for label in (0, 1) for t in rng.sample(by_class[label], count)]
    rng.shuffle(labeled)
    return labeled


def ner_labels(tokens):
    """B, I or O per token: runs of digits joined by '.' or ',' are the entities."""
    labels = []
    for i, token in enumerate(tokens):
        number = token.isdigit()
        joiner = token in (".", ",") and 0 < i < len(tokens) - 1 and tokens[i - 1].isdigit() and tokens[i + 1].isdigit()
        if not (number or joiner):
            labels.append("O")
        elif labels and labels[-1] in ("B", "I") and (joiner or tokens[i - 1] in (".", ",")):
            labels.append("I")
        else:
            labels.append("B")
    return labels


def write_csv_split(directory, header, rows):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "part-0.csv"), "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)
    with open(os.path.join(directory, "meta.dat"), "w") as meta:
        meta.write("part-0.csv %d\n" % len(rows))


def ner_rows(documents):
    rows = []
    for document in documents:
        for tokens in document:
            tokens = tokens[:FINETUNE_LENGTH - 2]
            labels = ner_labels(tokens)
            if "B" in labels or len(rows) % 4 == 0:
                rows.append([" ".join(["[CLS]"] + tokens + ["[SEP]"]), " ".join(["[CLS]"] + labels + ["[SEP]"])])
    return rows


def bertsum_rows(documents, ids):
    rows = []
    for document in documents:
        for start in range(0, len(document), SUMMARY_SENTENCES):
            tokens, labels, segments, cls = [], [], [], []
            for k, sentence in enumerate(document[start:start + SUMMARY_SENTENCES]):
                piece = ["[CLS]"] + sentence[:30] + ["[SEP]"]
                if len(tokens) + len(piece) > SUMMARY_LENGTH:
                    break
                cls.append(len(tokens))
                tokens += piece
                segments += [k % 2] * len(piece)
                labels.append(int(any(w in SUMMARY_WORDS for w in sentence)))
            if len(cls) >= 3:
                rows.append([repr([ids.get(t, ids["[UNK]"]) for t in tokens]), repr(labels), repr(segments), repr(cls)])
    return rows


def write_finetuning(out, train_docs, val_docs, gnu, vocab, rng):
    ids = {token: i for i, token in enumerate(vocab)}
    for name, docs, file in (("train", train_docs, "train.tsv"), ("val", val_docs, "dev.tsv")):
        examples = glue_examples(docs, gnu, rng)
        write_glue(os.path.join(out, "glue"), file, examples)
        print("glue %s: %d sentences" % (name, len(examples)))
        ner = ner_rows(docs)
        write_csv_split(os.path.join(out, "ner", name), ["tokens", "labels"], ner)
        print("ner %s: %d sentences" % (name, len(ner)))
        summaries = bertsum_rows(docs, ids)
        write_csv_split(os.path.join(out, "bertsum", name), ["input_token_ids", "labels", "segment_ids", "cls_ids"], summaries)
        print("bertsum %s: %d documents" % (name, len(summaries)))
    with open(os.path.join(out, "ner", "label2id.json"), "w") as labels:
        json.dump(NER_LABELS, labels)


SEQ2SEQ_SPECIAL = ["<pad>", "<unk>", "<s>", "</s>"]
REVERSED_LENGTH = 30


def write_seq2seq(out, train_docs, val_docs, words):
    """T5 paragraphs and the reversal pairs of the Transformer, with their vocabulary."""
    os.makedirs(os.path.join(out, "seq2seq"), exist_ok=True)
    with open(os.path.join(out, "seq2seq", "vocab.txt"), "w") as v:
        v.write("\n".join(SEQ2SEQ_SPECIAL + words) + "\n")
    for name, docs in (("train", train_docs), ("val", val_docs)):
        t5 = os.path.join(out, "seq2seq", "t5", name)
        os.makedirs(t5, exist_ok=True)
        lines = [" ".join(w for s in doc[i:i + 4] for w in s) for doc in docs for i in range(0, len(doc), 4)]
        with open(os.path.join(t5, "part-0.txt"), "w") as text:
            text.write("\n".join(lines) + "\n")
        with open(os.path.join(t5, "meta.dat"), "w") as meta:
            meta.write("part-0.txt %d\n" % len(lines))
        pairs = [s for doc in docs for s in doc if len(s) <= REVERSED_LENGTH]
        reversal = os.path.join(out, "seq2seq", "transformer", name)
        os.makedirs(reversal, exist_ok=True)
        with open(os.path.join(reversal, "source.txt"), "w") as source, \
                open(os.path.join(reversal, "target.txt"), "w") as target:
            for sentence in pairs:
                source.write(" ".join(sentence) + "\n")
                target.write(" ".join(reversed(sentence)) + "\n")
        with open(os.path.join(reversal, "meta.dat"), "w") as meta:
            meta.write("source.txt target.txt %d\n" % len(pairs))
        print("seq2seq %s: %d t5 paragraphs, %d transformer pairs" % (name, len(lines), len(pairs)))


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
    val_sentences = [sentences(t) for t in val]
    for name, split in (("train", train_sentences), ("val", val_sentences)):
        examples = bert_examples(split, rng)
        write_bert(os.path.join(out, "bert", name), examples)
        print("bert %s: %d examples, vocabulary of %d tokens" % (name, len(examples), len(vocab)))
    gnu = [os.path.basename(path).startswith(("GPL", "LGPL", "GFDL")) for path in sys.argv[2:]]
    write_finetuning(out, train_sentences, val_sentences, gnu, vocab, random.Random(2))
    write_seq2seq(out, train_sentences, val_sentences, vocab[len(SPECIAL):])


if __name__ == "__main__":
    main()
