"""Write the output of every `xlcalc` command the docs quote into the doc, or check that it is up to date.

A quoted command is marked in README.md or docs/*.md by a pair of HTML comments around a fenced block:

    <!-- command: xlcalc plan --model llama2-70b --gpu A800 --n-gpus 1024 \\
        --tokens-t 2 --top 1 -->
    ```text
    $ xlcalc plan ... (the command as in the marker)
    ... (its output, written by this script)
    ```
    <!-- end command -->

Each command runs in this process (``xlcalc.cli.main``, stdout and stderr captured together) with a fixed
terminal width and no colour, so the docs read the same on every machine.

    python scripts/make_command_docs.py          # rewrite every marked block that is out of date
    python scripts/make_command_docs.py --check  # exit 1 naming each block that is out of date
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import re
import shlex
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from xlcalc.atomic import write_text

BLOCK = re.compile(r"<!-- command: (?P<command>.*?) -->\n(?P<body>.*?)<!-- end command -->", re.DOTALL)
ENVIRONMENT = {"COLUMNS": "100", "LINES": "50", "NO_COLOR": "1", "TERM": "dumb"}


def argv_of(command: str) -> list[str]:
    """The arguments of a marked command (``xlcalc`` first; a backslash at a line's end continues it)."""
    words = shlex.split(command.replace("\\\n", " "))
    if not words or words[0] != "xlcalc":
        raise ValueError(f"a marked command starts with 'xlcalc', not {command[:40]!r}")
    return words[1:]


def run(command: str) -> str:
    """What ``command`` prints, run in this process; a command that fails is an error, never quoted."""
    from xlcalc.cli import main

    out = io.StringIO()
    with mock.patch.dict(os.environ, ENVIRONMENT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            rc = main(argv_of(command))
        except SystemExit as exc:  # argparse: a flag it does not know
            rc = exc.code if isinstance(exc.code, int) else 2
    if rc != 0:
        raise RuntimeError(f"`{command}` exited {rc}:\n{out.getvalue()}")
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").splitlines())


def render(command: str) -> str:
    """The fenced block between a command's markers: the command, then its output."""
    return f"```text\n$ {command}\n{run(command)}\n```\n"


def regenerate(text: str) -> tuple[str, list[tuple[int, str]]]:
    """``text`` with every marked block regenerated, and the blocks that changed: the line of the opening marker
    (1-based) and the command."""
    stale: list[tuple[int, str]] = []
    rendered = functools.cache(render)  # a command quoted twice runs once

    def one(m: re.Match[str]) -> str:
        command = m.group("command").strip()
        body = rendered(command)
        if body != m.group("body"):
            stale.append((text.count("\n", 0, m.start()) + 1, command))
        return f"<!-- command: {m.group('command')} -->\n{body}<!-- end command -->"

    return BLOCK.sub(one, text), stale


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 naming each block that is out of date")
    args = parser.parse_args(argv)
    status = 0
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:  # the docs that may quote commands
        text = doc.read_text(encoding="utf-8")
        try:
            new, stale = regenerate(text)
        except (ValueError, RuntimeError) as exc:
            print(f"{doc.relative_to(root)}: {exc}", file=sys.stderr)
            status = 1
            continue
        if stale and args.check:
            status = 1
            for line, command in stale:
                print(f"{doc.relative_to(root)}:{line}: out of date: {command.splitlines()[0]}", file=sys.stderr)
        elif stale:
            write_text(doc, new)
            print(f"wrote {doc.relative_to(root)} ({len(stale)} block(s))")
    if status and args.check:
        print("run python scripts/make_command_docs.py", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
