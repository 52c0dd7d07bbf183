#!/usr/bin/env python3
"""Trains the params files the Model Zoo shipped for one step each, as a user of any release
would run them on a small machine: the file converted to the 2.10 trainer format (`csrun config
convert`), a batch of 2 (micro-batch sizes set to match), --fake_data, one training step and one
eval step where the file has an eval input, no checkpoints.

Files whose model, precision, optimizer and input are those of a file already run are not run
again (the table names the file they repeat); networks with more parameters than --max_params
are left out (they train the same kernels at more cost). Every other file gets one verdict:

  trained   the step ran; the table gives the loss, the eval loss, the seconds and the peak RSS
  refused   csrun said, before allocating, that the run needs more memory than this machine has
  failed    anything else (the first error line is shown); the script then exits 1
  timeout   the run took longer than --timeout seconds

Usage: scripts/train_release_files.py [--csrun PATH] [--batch N] [--max_params N]
                                      [--timeout S] [--work DIR] [PATTERN]
PATTERN (a regular expression) picks files by their INDEX.tsv name, e.g. 'Release_2.10.0/gpt3'.
Reads ../shared/modelzoo-configs/releases in place. Needs python3-yaml.
"""
import argparse
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

try:
    import yaml
except ImportError:
    sys.exit("train_release_files.py needs PyYAML: apt-get install python3-yaml")

ROOT = pathlib.Path(__file__).resolve().parent.parent
RELEASES = ROOT.parent / "shared" / "modelzoo-configs" / "releases"


def accepted_files(pattern):
    lines = (RELEASES / "INDEX.tsv").read_text().splitlines()[1:]
    for line in lines:
        name, expected = line.split("\t")[:2]
        if expected == "accept" and re.search(pattern, name):
            yield name


def trainers(document):
    """(prefix, trainer) for each trainer of a converted file, prefix in --set's dotted form."""
    section = document["trainer"]
    if isinstance(section, dict):
        return [("trainer", section)]
    return [(f"trainer.{i}.trainer", item["trainer"]) for i, item in enumerate(section)]


def micro_batch_paths(node, path):
    """Dotted paths of every micro_batch_size key under node (keys holding dots kept whole)."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}"
            if str(key).split(".")[-1] == "micro_batch_size":
                yield here
            else:
                yield from micro_batch_paths(value, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from micro_batch_paths(value, f"{path}.{i}")


def loaders(trainer):
    """(dotted path, loader) for every data loader of a trainer (fit, validate, validate_all), any
    of which may be a list of loaders."""
    for stage in ("fit", "validate", "validate_all"):
        for name, section in (trainer.get(stage) or {}).items():
            if not name.endswith(("dataloader", "dataloaders")):
                continue
            if isinstance(section, dict):
                yield f"{stage}.{name}", section
            elif isinstance(section, list):
                yield from ((f"{stage}.{name}.{i}", item) for i, item in enumerate(section))


def overrides(document, batch):
    """--set arguments: the small batch everywhere, one eval step, no checkpoints."""
    sets = []
    for prefix, trainer in trainers(document):
        paths = [path for path, _ in loaders(trainer)]
        sets += [f"{prefix}.{path}.batch_size={batch}" for path in paths]
        if any(not path.startswith("fit.train_dataloader") for path in paths):
            sets.append(f"{prefix}.init.loop.eval_steps=1")
        sets += [f"{path}={batch}" for path in micro_batch_paths(trainer.get("init"), f"{prefix}.init")]
        sets += [f"{prefix}.init.checkpoint.steps=0",
                 f"{prefix}.init.checkpoint.save_initial_checkpoint=false",
                 f"{prefix}.init.logging.log_steps=1"]
    return [argument for value in sets for argument in ("--set", value)]


def network_signature(document):
    """What decides the kernels a file trains: not its data paths, schedules or comments."""
    parts = []
    for _, trainer in trainers(document):
        init = trainer.get("init") or {}
        inputs = [{key: value for key, value in loader.items()
                   if key in ("data_processor", "max_sequence_length", "src_max_sequence_length",
                              "tgt_max_sequence_length", "image_shape", "num_classes")}
                  for _, loader in loaders(trainer)]
        parts.append({"model": init.get("model"), "precision": init.get("precision"),
                      "optimizer": init.get("optimizer"), "inputs": inputs})
    return json.dumps(parts, sort_keys=True, default=str)


def run(command, timeout):
    """(exit status, or None when it ran past timeout; stdout; stderr; seconds; peak RSS in MB)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err)
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        timed_out = not timer.is_alive()
        timer.cancel()
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        code = None if timed_out else os.waitstatus_to_exitcode(status)
        return (code, out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                seconds, usage.ru_maxrss / 1024)


def error_line(text):
    """The first finding csrun printed as an error, else its last line: what stopped a run."""
    lines = text.strip().splitlines()
    for line in lines:
        if ": error: " in line:
            return line.strip()
    return lines[-1].strip() if lines else "(nothing on stderr)"


def last_match(pattern, text):
    found = re.findall(pattern, text)
    return found[-1] if found else "-"


def finite(*values):
    """Whether every logged loss (a '-' is one not logged) is a finite number."""
    return all(value == "-" or math.isfinite(float(value)) for value in values)


def train_row(args, name, converted, document, work):
    """(verdict, the table's row) for a file not run before: validated, then trained."""
    common = ["--fake_data", *overrides(document, args.batch)]
    code, out, err, _, _ = run([args.csrun, "validate", str(converted), *common], args.timeout)
    if code is None:
        return "timeout", f"{name:64} {'timeout':8} validate: after {args.timeout} s"
    if code != 0:
        return "failed", f"{name:64} {'failed':8} validate: {error_line(err)}"
    parameters = last_match(r"model +[^,\n]+, ([\d,]+) parameters", out)
    if parameters != "-" and int(parameters.replace(",", "")) > args.max_params:
        return "skipped", f"{name:64} {'skipped':8} {parameters:>13}  more than --max_params"
    model_dir = work / f"{converted.stem}.model_dir"
    code, out, err, seconds, rss = run(
        [args.csrun, "train", str(converted), *common, "--max_steps", "1", "--num_csx", "1",
         "--num_workers_per_csx", "0", "-o", str(model_dir)], args.timeout)
    shutil.rmtree(model_dir, ignore_errors=True)  # the final checkpoint: GBs a file
    loss = last_match(r"Train Device=.*Loss=([^,\s]+)", out)
    eval_loss = last_match(r"Avg Eval Loss: (\S+)", out)
    if code is None:
        verdict, note = "timeout", f"after {args.timeout} s"
    elif code == 0:
        verdict, note = ("trained", "") if finite(loss, eval_loss) else ("failed", "a loss is not finite")
    elif code == 1 and "of host memory" in err and "more than" in err:
        verdict, note = "refused", error_line(err)
    else:
        verdict, note = "failed", error_line(err)
    return verdict, (f"{name:64} {verdict:8} {parameters:>13} {loss:>9} {eval_loss:>9} "
                     f"{seconds:6.1f} {rss:6.0f}  {note}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pattern", nargs="?", default="")
    parser.add_argument("--csrun", default=str(ROOT / "build" / "apps" / "csrun" / "csrun"))
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--max_params", type=float, default=400e6)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="csrun-release-files-"))
    work.mkdir(parents=True, exist_ok=True)

    print(f"{'file':64} {'verdict':8} {'params':>13} {'loss':>9} {'eval':>9} {'s':>6} "
          f"{'MB':>6}  note", flush=True)
    seen = {}
    failed = 0
    for index, name in enumerate(accepted_files(args.pattern)):
        converted = work / f"{index}.yaml"
        code, _, err, _, _ = run([args.csrun, "config", "convert", str(RELEASES / name),
                                  "-o", str(converted)], args.timeout)
        if code is None:
            verdict, row = "timeout", f"{name:64} {'timeout':8} convert: after {args.timeout} s"
        elif code != 0:
            verdict, row = "failed", f"{name:64} {'failed':8} convert: {error_line(err)}"
        else:
            document = yaml.safe_load(converted.read_text())
            signature = network_signature(document)
            if signature in seen:
                verdict, row = "same", f"{name:64} {'same':8} as {seen[signature]}"
            else:
                seen[signature] = name
                verdict, row = train_row(args, name, converted, document, work)
        failed += verdict == "failed"
        print(row, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
