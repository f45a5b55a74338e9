"""The generated part of a hand-written doc: the text between two markers, rewritten or checked (--check)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from xlcalc.atomic import write_text


def splice(text: str, begin: str, end: str, body: str) -> str | None:
    """``text`` with ``body`` between its markers (a blank line after ``begin``); None if a marker is missing."""
    if begin not in text or end not in text:
        return None
    head, rest = text.split(begin, 1)
    return head + begin + "\n\n" + body + "\n" + end + rest.split(end, 1)[1]


def md_table(headers: Sequence[object], rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table's lines: the header, its rule, one line per row."""
    out = ["| " + " | ".join(map(str, headers)) + " |", "|" + "---|" * len(headers)]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def write_or_check(out: Path, body: str, begin: str, end: str, script: str, *, check: bool) -> int:
    """Put ``body`` between the markers of ``out``, replacing the file atomically; ``check``: exit status 1 if the
    file is out of date, and nothing written."""
    text = out.read_text(encoding="utf-8")
    if (new := splice(text, begin, end, body)) is None:
        print(f"docs/{out.name} lacks the markers {begin!r} ... {end!r}", file=sys.stderr)
        return 1
    return replace_or_check(out, text, new, script, check=check)


def replace_or_check(out: Path, text: str, new: str, script: str, *, check: bool) -> int:
    """Replace ``out`` (now ``text``) by ``new`` atomically; ``check``: exit status 1 if they differ, nothing
    written."""
    if check:
        if new != text:
            print(f"docs/{out.name} is out of date: run python scripts/{script}", file=sys.stderr)
            return 1
        return 0
    write_text(out, new)
    print(f"wrote docs/{out.name}")
    return 0


def doc_main(out: Path, render: Callable[[], str], script: str, description: str,
             markers: tuple[str, str] | None = None) -> int:
    """Write render() into ``out``, between its ``markers`` or as the whole file (``--check``: exit 1 if the file
    is out of date)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=f"fail if docs/{out.name} is out of date")
    check = parser.parse_args().check
    if markers:
        return write_or_check(out, render(), *markers, script, check=check)
    text = out.read_text(encoding="utf-8") if out.exists() else ""
    return replace_or_check(out, text, render(), script, check=check)
