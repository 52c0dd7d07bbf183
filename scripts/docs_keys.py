#!/usr/bin/env python3
"""Regenerates the key tables of docs/models.md, docs/data.md and docs/params.md from csrun's
schemas: every section headed `### NAME`, where NAME is a network, data processor, optimizer, LR
scheduler, callback or logger, gets what `csrun config keys NAME` prints. The rest of each page is
left as written. The docs test (test/integration/docs_test.cpp) fails when a table is stale.

Usage: scripts/docs_keys.py [CSRUN]   (default: build/apps/csrun/csrun)
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = ["docs/models.md", "docs/data.md", "docs/params.md"]


def known_names(csrun):
    listing = subprocess.run([csrun, "config", "keys"], check=True, capture_output=True,
                             text=True).stdout
    names = set()
    for line in listing.splitlines():
        names.update(line.split(":", 1)[1].split())
    return names


def regenerate(page, csrun, names):
    text = page.read_text()
    parts = re.split(r"(?m)^(### .*)$", text)
    out = [parts[0]]
    for heading, body in zip(parts[1::2], parts[2::2]):
        name = heading[4:].strip()
        if name in names:
            keys = subprocess.run([csrun, "config", "keys", name], check=True,
                                  capture_output=True, text=True).stdout
            # The section keeps what follows its generated part: the text up to the next heading
            # of a higher level (## ...), which belongs to the page.
            tail = re.search(r"(?m)^## ", body)
            rest = body[tail.start():] if tail else ""
            body = "\n\n" + (keys.rstrip("\n") + "\n\n" if keys else "") + rest
        out += [heading, body]
    page.write_text("".join(out))


def main():
    csrun = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build/apps/csrun/csrun")
    names = known_names(csrun)
    for page in PAGES:
        regenerate(ROOT / page, csrun, names)


if __name__ == "__main__":
    main()
