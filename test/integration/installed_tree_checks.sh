#!/usr/bin/env bash
# Checks an installed csrun tree (a `cmake --install` prefix, or /usr of an extracted .deb): its
# files are there, csrun runs and trains a shipped config there, the man page and the bash
# completion work. Run from a scratch directory outside the checkout.
# Usage: installed_tree_checks.sh PREFIX
set -euo pipefail
prefix=$1
fail() { echo "FAIL: $*" >&2; exit 1; }

for file in bin/csrun bin/csrun-gpt-hdf5 bin/csrun-shapes-hdf5 share/csrun/configs/fc_mnist.yaml \
  share/csrun/configs/gpt3_111m.yaml share/csrun/configs/unet_tiny.yaml share/csrun/slurm/train.sbatch \
  share/csrun/slurm/validate.sbatch share/csrun/scripts/prepare_digits.sh \
  share/csrun/scripts/prepare_shapes.sh share/csrun/scripts/data/digits_to_idx.py \
  share/doc/csrun/README.md share/doc/csrun/install.md share/man/man1/csrun.1 \
  share/bash-completion/completions/csrun; do
  [ -e "$prefix/$file" ] || fail "$file is not installed in $prefix"
done
if grep -l "build/apps" "$prefix"/share/csrun/slurm/*; then
  fail "an sbatch script names a path into a checkout"
fi

csrun=$prefix/bin/csrun
"$csrun" --version | grep -q "^kernels: " || fail "csrun --version names no kernel set"
"$csrun" train "$prefix/share/csrun/configs/fc_mnist.yaml" --fake_data --max_steps 5 -o model \
  > train.out 2>&1 || { cat train.out; fail "the installed csrun could not train a shipped config"; }
grep -q "Training completed successfully!" train.out || fail "train: $(cat train.out)"
PATH=$prefix/bin:$PATH "$prefix/share/csrun/scripts/prepare_shapes.sh" > shapes.out 2>&1 ||
  { cat shapes.out; fail "the installed prepare_shapes.sh could not make data/shapes"; }
"$csrun" train "$prefix/share/csrun/configs/unet_tiny.yaml" --max_steps 2 -o unet > unet.out 2>&1 ||
  { cat unet.out; fail "the installed csrun could not train configs/unet_tiny.yaml on data/shapes"; }
"$csrun" compile "$prefix/share/csrun/configs/gpt3_111m.yaml" --fake_data -o gpt3 > compile.out 2>&1 ||
  { cat compile.out; fail "the installed csrun could not compile configs/gpt3_111m.yaml"; }

man_page=$prefix/share/man/man1/csrun.1
for text in '^\.SH SUBCOMMANDS' '^\.SS csrun train' 'CSRUN_CPU' '^\.SH "EXIT STATUS"'; do
  grep -q "$text" "$man_page" || fail "the man page has no $text"
done

# Completion candidates for the words of a command line, the last being completed.
complete_words() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _csrun
           printf "%s\n" "${COMPREPLY[@]}"' _ "$prefix/share/bash-completion/completions/csrun" "$@"
}
[ "$(complete_words "$csrun" tr)" = train ] || fail "completion of 'tr': $(complete_words "$csrun" tr)"
[ "$(complete_words "$csrun" train --fake)" = --fake_data ] || fail "completion of 'train --fake'"
[ "$(complete_words "$csrun" compile --wafer '' | tr '\n' ' ')" = "wse2 wse3 " ] ||
  fail "completion of 'compile --wafer': $(complete_words "$csrun" compile --wafer '')"
mkdir -p configs_here && touch configs_here/run.yaml configs_here/notes.txt
[ "$(complete_words "$csrun" validate configs_here/)" = configs_here/run.yaml ] ||
  fail "completion of a params file: $(complete_words "$csrun" validate configs_here/)"
