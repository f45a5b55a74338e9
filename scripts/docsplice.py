"""The generated part of a hand-written doc: the text between two markers, rewritten or checked (--check)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def splice_main(out: Path, render: Callable[[], str], begin: str, end: str, script: str, description: str) -> int:
    """Write render() between the markers of ``out`` (``--check``: exit 1 if the file is out of date)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=f"fail if docs/{out.name} is out of date")
    args = parser.parse_args()
    text = out.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        print(f"docs/{out.name} lacks the markers {begin!r} ... {end!r}", file=sys.stderr)
        return 1
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    new = head + begin + "\n\n" + render() + "\n" + end + tail
    if args.check:
        if new != text:
            print(f"docs/{out.name} is out of date: run python scripts/{script}", file=sys.stderr)
            return 1
        return 0
    out.write_text(new, encoding="utf-8")
    print(f"wrote docs/{out.name}")
    return 0
