#!/bin/sh
# Prints the sections help2man adds to csrun's man page (its --include file): every
# subcommand's --help, the environment and where the documentation is.
# Usage: packaging/man_sections.sh CSRUN OUTPUT
set -eu
csrun=$1
exec >"$2"
echo "[SUBCOMMANDS]"
for subcommand in validate compile train eval worker; do
  echo ".SS csrun $subcommand"
  echo ".nf"
  # Escape roff's backslash and a leading dot or quote.
  "$csrun" "$subcommand" --help | sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
  echo ".fi"
done
cat <<'SECTIONS'
[EXIT STATUS]
0 on success, 1 for an error in the params, data, checkpoints or surroundings (the message
names the file, line and key), 2 for a usage error, 143 for a training run stopped by SIGTERM
or SIGINT after its checkpoint.
[ENVIRONMENT]
.TP
.B CSRUN_CPU
The kernel set to run: avx512, avx2 or baseline (default: the best this CPU runs, as
csrun --version reports). A set the CPU cannot run is a usage error.
.TP
.B CSRUN_STREAM_SECRET
The shared secret of data workers started by hand (csrun worker).
[FILES]
Example params files and SLURM batch scripts are installed in /usr/share/csrun (or
PREFIX/share/csrun).
[SEE ALSO]
The full documentation is in /usr/share/doc/csrun (or PREFIX/share/doc/csrun): README.md,
install.md, cli.md, running.md, slurm.md.
SECTIONS
