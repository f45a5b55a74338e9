"""The package's layering, read from the source's own import statements (ast):

* no import cycle among xlcalc's modules (a module-level or a function-level import both count: a cycle
  hidden in a function still ties two rooms together);
* no face imports another face: the command line (xlcalc/cli), the workbook builder (xlcalc/workbook) and the
  worksheet functions (udfs/) import the engine, never each other -- but for the command line's two doors to
  the workbook (``xlcalc workbook``, ``xlcalc read``), which take the builder's public names from the package
  ``xlcalc.workbook`` itself (``build``, ``read_workbook``), never from its rooms;
* no module imports another package's private name (``from xlcalc.expr import _x``); within one package
  (one folder) a module may share its helpers with its siblings;
* no hand-written Python file (xlcalc, udfs, scripts, tests, bench, build_workbook.py) is over 600 lines
  (issue 22): the generated ones are named, and so are those still to be split.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FACES = {"xlcalc.cli": "the command line", "xlcalc.workbook": "the workbook builder", "udfs": "the worksheet functions"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    files = [*sorted((ROOT / "xlcalc").rglob("*.py")), *sorted((ROOT / "udfs").glob("*.py"))]
    return {_module_name(p): p for p in files}


def _imports(name: str, path: Path, known: set[str]) -> list[tuple[str, list[str], int]]:
    """(module imported, names taken from it, line) for every import in the file, relative ones resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join([*base, node.module] if node.module else base)
            else:
                mod = node.module or ""
            names = [a.name for a in node.names]
            # `from . import x` imports the module x when there is one
            subs = [f"{mod}.{n}" for n in names if f"{mod}.{n}" in known]
            out += [(s, [], node.lineno) for s in subs]
            rest = [n for n in names if f"{mod}.{n}" not in known]
            if rest or not subs:
                out.append((mod, rest, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    sources = _sources()
    known = set(sources)
    graph: dict[str, set[str]] = {}
    for name, path in sources.items():
        graph[name] = {m for m, _, _ in _imports(name, path, known) if m in known and m != name}
    return graph


def _face(module: str) -> str | None:
    return next((f for f in FACES if module == f or module.startswith(f + ".")), None)


def test_no_import_cycle_among_the_packages_modules():
    graph = {m: deps for m, deps in _graph().items() if m.startswith("xlcalc")}
    # a package's __init__ re-exporting its own modules is not a cycle between rooms: drop package -> own child
    for m, deps in graph.items():
        graph[m] = {d for d in deps if not d.startswith(m + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_no_face_imports_another_face():
    sources = _sources()
    known = set(sources)
    wrong = []
    for name, path in sources.items():
        mine = _face(name)
        if mine is None:
            continue
        for mod, _, line in _imports(name, path, known):
            theirs = _face(mod)
            if mine == "xlcalc.cli" and mod == "xlcalc.workbook":
                continue  # the package's public surface (its __all__), the command line's door to the workbook
            if theirs is not None and theirs != mine:
                wrong.append(f"{path.relative_to(ROOT)}:{line} ({FACES[mine]}) imports {mod} ({FACES[theirs]})")
    assert not wrong, "\n".join(wrong)


def test_no_private_name_taken_from_another_package():
    sources = _sources()
    known = set(sources)
    wrong = []
    for name, path in sources.items():
        home = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for mod, names, line in _imports(name, path, known):
            if mod not in known:
                continue
            theirs = mod if sources[mod].name == "__init__.py" else mod.rpartition(".")[0]
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and theirs != home:
                wrong.append(f"{path.relative_to(ROOT)}:{line} takes {', '.join(private)} from {mod}")
    assert not wrong, "\n".join(wrong)


def test_the_checks_see_a_cycle_a_face_crossing_and_a_private_name(tmp_path, monkeypatch):
    # the readers above on a made-up tree: each check must be able to fail
    (tmp_path / "xlcalc" / "cli").mkdir(parents=True)
    (tmp_path / "xlcalc" / "workbook").mkdir()
    (tmp_path / "udfs").mkdir()
    (tmp_path / "xlcalc" / "__init__.py").write_text("")
    (tmp_path / "xlcalc" / "a.py").write_text("def f():\n    from . import b\n")
    (tmp_path / "xlcalc" / "b.py").write_text("from .a import f\n_hidden = 1\n")
    (tmp_path / "xlcalc" / "cli" / "__init__.py").write_text("from ..workbook.sheets import build\n")
    (tmp_path / "xlcalc" / "workbook" / "__init__.py").write_text("from ..b import _hidden\n")
    (tmp_path / "xlcalc" / "workbook" / "sheets.py").write_text("build = 1\n")
    (tmp_path / "udfs" / "u.py").write_text("import xlcalc.cli\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    import pytest

    with pytest.raises(AssertionError, match="xlcalc.a <-> xlcalc.b"):
        test_no_import_cycle_among_the_packages_modules()
    with pytest.raises(AssertionError) as face:
        test_no_face_imports_another_face()
    assert "imports xlcalc.workbook" in str(face.value) and "udfs/u.py:1" in str(face.value)
    with pytest.raises(AssertionError, match="takes _hidden from xlcalc.b"):
        test_no_private_name_taken_from_another_package()


# --- room size (issue 22): no hand-written file over MAX_LINES -----------------------------------------------------

MAX_LINES = 600
SIZED = ("xlcalc/", "udfs/", "scripts/", "tests/", "bench/", "build_workbook.py")
GENERATED = {"xlcalc/stage_memory_code.py", "udfs/xlcalc_udfs.py"}  # written by scripts/make_*.py, not by hand
# Hand-written files still over the limit, to be split (issue 22, open): the test fails when one of them is split
# (take it off this list) and when any other file grows past the limit.
STILL_OVER: set[str] = set()


def _tracked_python() -> list[str]:
    import subprocess

    import pytest

    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", "*.py"], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [p for p in out.stdout.decode().split("\0") if p.startswith(SIZED)]


def test_no_hand_written_file_is_over_the_limit():
    over = set()
    for rel in _tracked_python():
        path = ROOT / rel
        if rel in GENERATED or not path.exists():
            continue
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_LINES:
            over.add(rel)
    assert over == STILL_OVER, (f"over {MAX_LINES} lines, not yet on STILL_OVER: {sorted(over - STILL_OVER)}; "
                                f"no longer over, take off STILL_OVER: {sorted(STILL_OVER - over)}")
