"""Every command the README and docs/ show in a code block runs as shown.

Blocks between ``<!-- command: ... -->`` markers are regenerated and compared by scripts/make_command_docs.py
(tests/test_docs.py); this test takes the other commands a reader copies: each ``xlcalc ...`` and
``python3 build_workbook.py ...`` line of a fenced block (continuation lines joined, a trailing ``# comment``
dropped, ``[--json]`` taken as ``--json``) and expects exit code 0. Each command runs in a folder of its own (the
lines of a block are often alternatives: two builds of ``planner.xlsx``), holding the files the block's earlier
commands wrote that it reads (``xlcalc read planner.xlsx``, ``plan --profile my-stack.json``).
The placeholder ``path/to/config.json`` is a Hugging Face config.json of the test data
(tests/data/hf_configs/llama-2-7b.json, Meta's Llama 2 7B).
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

import build_workbook
from xlcalc.cli import main as xlcalc_main

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONFIG = ROOT / "tests" / "data" / "hf_configs" / "llama-2-7b.json"
RUNNERS = {"xlcalc": xlcalc_main, "build_workbook.py": build_workbook.main}


def commands(text: str) -> list[tuple[int, int, list[str]]]:
    """(block, line number, argv) of each command in the fenced blocks outside the checked command blocks."""
    found: list[tuple[int, int, list[str]]] = []
    block = 0
    fenced = checked = False
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("<!-- command:"):
            checked = True
        elif line.startswith("<!-- end command"):
            checked = False
        elif line.lstrip().startswith("```"):
            fenced = not fenced
            block += 1
        elif fenced and not checked:
            body = line.strip().removeprefix("$ ")
            if not pending:
                start = number
            pending += " " + body.removesuffix("\\")
            if body.endswith("\\"):
                continue
            for part in re.sub(r"\s#\s.*$", "", pending).split("&&"):
                argv = shlex.split(part.replace("[--json]", "--json"))
                if argv[:1] == ["xlcalc"]:
                    found.append((block, start, argv))
                elif argv[:2] == ["python3", "build_workbook.py"]:
                    found.append((block, start, argv[1:]))
            pending = ""
    return found


EXAMPLES = {doc.name: commands(doc.read_text(encoding="utf-8")) for doc in DOCS}


def test_the_docs_show_commands_outside_the_checked_blocks():
    """The parser finds what a reader would copy (it can fail: a parser that finds nothing checks nothing)."""
    shown = {name: [" ".join(argv) for _, _, argv in found] for name, found in EXAMPLES.items()}
    assert any(c.startswith("xlcalc calibrate ") for c in shown["calibrate.md"])
    assert "xlcalc read planner.xlsx --json" in shown["README.md"]
    assert any(c.startswith("build_workbook.py -o planner.xlsx") for c in shown["workbook.md"])
    assert sum(map(len, shown.values())) >= 15
    numbers = re.findall(r"  # (-?\d[\d.]*)", "".join(python_blocks((ROOT / "docs" / "catalogs.md").read_text())))
    assert numbers == ["989.4", "320.0", "68.976648192", "2.0"]


def test_a_doc_command_that_fails_is_found(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (argv,) = [a for _, _, a in commands("```\nxlcalc plan --model llama3-8b --gpu h100 --n-gpus 8\n```\n")]
    assert xlcalc_main(argv[1:]) != 0
    assert "unknown model 'llama3-8b'" in capsys.readouterr().err


@pytest.mark.parametrize("doc", [d.name for d in DOCS if EXAMPLES[d.name]])
def test_every_command_shown_runs(doc, tmp_path, monkeypatch, capsys):
    written: dict[tuple[int, str], Path] = {}  # (block, file name) -> the file an earlier command wrote
    for i, (block, number, argv) in enumerate(EXAMPLES[doc]):
        here = tmp_path / str(i)
        (here / "path" / "to").mkdir(parents=True)
        shutil.copy(CONFIG, here / "path" / "to" / "config.json")
        outputs = {argv[j + 1] for j, a in enumerate(argv[:-1]) if a in ("-o", "--out", "--output")}
        for (b, name), path in written.items():
            if b == block and name in argv and name not in outputs:
                shutil.copy(path, here / name)
        monkeypatch.chdir(here)
        code = RUNNERS[argv[0]](argv[1:])
        err = capsys.readouterr().err
        assert code == 0, f"{doc}:{number}: {shlex.join(argv)} exited {code}: {err[-600:]}"
        written.update({(block, p.name): p for p in here.iterdir() if p.is_file()})


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


@pytest.mark.parametrize("doc", [d.name for d in DOCS[1:] if python_blocks(d.read_text(encoding="utf-8"))])
def test_every_python_example_runs_and_gives_the_number_it_shows(doc, tmp_path, monkeypatch):
    """docs/ Python blocks (the README's ``>>>`` session is a doctest in tests/test_docs.py) run line by line; a
    line ``expression  # 989.4 ...`` must give the number its comment shows, to the decimals shown. The files the
    examples name stand in the folder: ``config.json`` (Llama 2 7B's) and ``my_gpus.toml`` (a copy of the GPU
    catalog)."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(CONFIG, tmp_path / "config.json")
    shutil.copy(ROOT / "xlcalc" / "data" / "gpus.toml", tmp_path / "my_gpus.toml")
    for block in python_blocks((ROOT / "docs" / doc).read_text(encoding="utf-8")):
        scope: dict = {}
        for line in block.splitlines():
            code, _, comment = line.partition("  # ")
            shown = re.match(r"\s*(-?\d+(?:\.(\d+))?)(?:\s|$)", comment)
            if shown:
                value = eval(code, scope)  # the doc's own example line
                assert round(value, len(shown.group(2) or "")) == float(shown.group(1)), f"{doc}: {line}"
            else:
                exec(code, scope)
