#!/usr/bin/env bash
# Builds data/text: the small real text corpus of configs/gpt2_tiny.yaml, gptj_tiny.yaml and
# llama_tiny.yaml (byte-level tokens in the Model Zoo's GPT HDF5 layout), configs/bert_tiny.yaml
# (the Model Zoo's BERT CSV files with a word vocabulary) and the BERT fine-tuning configs
# (bert_classifier_tiny.yaml: GLUE TSV; bert_token_classifier_tiny.yaml: NER CSV;
# bert_summarization_tiny.yaml: BertSum CSV) and the encoder-decoder configs (t5_tiny.yaml and
# transformer_tiny.yaml: the Model Zoo's T5 and Transformer text layouts; scripts/data/text_corpus.py
# says what each holds).
#
# Source: the license texts every Debian system carries in /usr/share/common-licenses (package
# base-files: GPL, LGPL, GFDL, Apache, Artistic, MPL, BSD, CC0; about 270 KB of English). Their
# authors permit verbatim copying and distribution; csrun only reads them to make training
# examples and ships none of them. scripts/data/text_corpus.py tokenizes them and
# csrun-gpt-hdf5 (built with csrun) writes the HDF5 files.
#
# Usage: scripts/prepare_text.sh [OUTPUT_DIR]     (default: data/text in the current directory,
#                                                 where the configs look for it)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-data/text}
source_dir=/usr/share/common-licenses

if [ -s "$out/gpt/train/data.h5" ] && [ -s "$out/bert/train/meta.dat" ] &&
   [ -s "$out/bertsum/train/meta.dat" ] && [ -s "$out/seq2seq/transformer/train/meta.dat" ]; then
  echo "prepare_text: $out is ready"
  exit 0
fi
documents=()
for file in "$source_dir"/*; do
  [ -f "$file" ] && [ ! -L "$file" ] && documents+=("$file")
done
if [ ${#documents[@]} -eq 0 ]; then
  echo "prepare_text: no license texts in $source_dir (Debian's base-files package puts them there)" >&2
  exit 1
fi

# From a checkout, the writer is built there; an installed csrun has it beside csrun.
if [ -x "$root/scripts/build.sh" ]; then
  "$root/scripts/build.sh" csrun-gpt-hdf5 >/dev/null
  writer=$root/build/apps/gpt_hdf5/csrun-gpt-hdf5
else
  writer=$(command -v csrun-gpt-hdf5) ||
    { echo "prepare_text: csrun-gpt-hdf5 is not on PATH (it is installed with csrun)" >&2; exit 1; }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/scripts/data/text_corpus.py" "$work" "${documents[@]}"
for split in train val; do
  mkdir -p "$work/gpt/$split"
  "$writer" "$work/gpt/$split.rows" 128 "$work/gpt/$split/data.h5"
  rm "$work/gpt/$split.rows"
done
cat > "$work/LICENSE.txt" <<'LICENSE'
Training examples made from the license texts of Debian's /usr/share/common-licenses (GNU GPL,
LGPL and FDL, Apache 2.0, Artistic, MPL, BSD, CC0), whose authors permit verbatim copying and
distribution. Tokenized by csrun's scripts/prepare_text.sh.
LICENSE
chmod 755 "$work"
mkdir -p "$(dirname "$out")"
rm -rf "$out"
mv "$work" "$out"
trap - EXIT
echo "prepare_text: wrote $out"
