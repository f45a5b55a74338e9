"""Registration through xlwings' own classic (BSD, Windows) code path, on Linux.

``xlwings.udfs`` needs pywin32, so the pywin32 modules are stubbed in
``sys.modules``; everything else is xlwings' real code: its decorators
(``xlfunc``/``xlarg``/``xlret``, which are ``xw.func``/``xw.arg``/``xw.ret`` on
Windows) are applied by ``udfs/xlcalc_udfs.py`` when it is imported, and
``import_udfs`` ("Import Functions" on the ribbon) writes the VBA module and calls
``Application.MacroOptions``, both captured by a fake workbook.
"""

from __future__ import annotations

import importlib
import re
import sys
import types
from pathlib import Path

import pytest

import xlcalc
from xlcalc.inputs import spec

xlwings = pytest.importorskip("xlwings")

ROOT = Path(__file__).resolve().parent.parent
MODULE = "xlcalc_udfs"
TABLES = "xlcalc_udf_tables"  # the hand-written worksheet functions, imported by MODULE
BOOK_NAME = "udf_demo.xlsm"

# VBA keywords that may not name a VBA parameter or function
VBA_KEYWORDS = set("""
and as attribute boolean byref byte byval call case cdecl const currency date decimal declare defbool
defbyte defcur defdate defdbl defint deflng deflnglng deflngptr defobj defsng defstr defvar dim do double
each else elseif empty end endif enum eqv erase error event exit false for friend function get global
gosub goto if imp implements in integer is let lib like long longlong longptr loop lset me mod new next
not nothing null on optional or paramarray preserve private property public raiseevent redim rem resume
return rset select set single static step stop string sub then to true type typeof until variant wend
while with withevents xor k xlpy
""".split())


class _ComError(Exception):
    pass


def _pywin32_stubs() -> dict[str, types.ModuleType]:
    pythoncom = types.ModuleType("pythoncom")
    pythoncom.CoInitialize = lambda: None
    pythoncom.IID_IDispatch = object()
    pywintypes = types.ModuleType("pywintypes")
    pywintypes.com_error = _ComError
    win32com = types.ModuleType("win32com")
    client = types.ModuleType("win32com.client")
    client.Dispatch = lambda obj, *a, **k: obj
    win32com.client = client
    return {"pythoncom": pythoncom, "pywintypes": pywintypes, "win32com": win32com, "win32com.client": client}


class FakeApplication:
    Version = "16.0"

    def __init__(self):
        self.macro_options: list[tuple[tuple, dict]] = []

    def MacroOptions(self, *args, **kwargs):  # noqa: N802 (Excel's name)
        self.macro_options.append((args, kwargs))

    def Run(self, *args):  # noqa: N802
        raise AssertionError(f"the fallback import path should not be needed: {args}")


class FakeComponents:
    def __init__(self):
        self.imported: list[str] = []

    def __call__(self, name):
        raise _ComError(f"no component {name}")  # first import: nothing to remove

    def Remove(self, component):  # noqa: N802
        raise AssertionError("nothing to remove")

    def Import(self, path):  # noqa: N802
        self.imported.append(Path(path).read_text())


class FakeWorkbook:
    Name = BOOK_NAME

    def __init__(self):
        self.Application = FakeApplication()
        self.VBProject = types.SimpleNamespace(VBComponents=FakeComponents())


@pytest.fixture(scope="module")
def registered():
    """Import xlcalc_udfs with xlwings' real classic decorators and run import_udfs."""
    mp = pytest.MonkeyPatch()
    saved = {k: sys.modules.get(k) for k in ("xlwings.udfs", MODULE, TABLES)}
    try:
        for name, module in _pywin32_stubs().items():
            mp.setitem(sys.modules, name, module)
        sys.modules.pop("xlwings.udfs", None)
        xw_udfs = importlib.import_module("xlwings.udfs")
        # what `import xlwings` binds on Windows with pywin32
        mp.setattr(xlwings, "func", xw_udfs.xlfunc)
        mp.setattr(xlwings, "arg", xw_udfs.xlarg)
        mp.setattr(xlwings, "ret", xw_udfs.xlret)
        # get_udf_module() first looks for code embedded in the workbook's sheets
        # (a PRO feature) through COM: a workbook without sheets.
        mp.setattr(xlwings, "_xlwindows", types.SimpleNamespace(Book=lambda xl: xl), raising=False)
        mp.setattr(xw_udfs, "Book", lambda impl: types.SimpleNamespace(sheets=[]))
        mp.syspath_prepend(str(ROOT / "udfs"))
        sys.modules.pop(MODULE, None)
        sys.modules.pop(TABLES, None)  # its decorators, too, must be the real ones
        book = FakeWorkbook()
        xw_udfs.import_udfs(MODULE, book)
        module = sys.modules[MODULE]
        yield types.SimpleNamespace(book=book, module=module, vba="".join(book.VBProject.VBComponents.imported))
    finally:
        mp.undo()
        for k, v in saved.items():  # leave the plain (Linux) module behind for other tests
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        if saved["xlwings.udfs"] is None and hasattr(xlwings, "udfs"):
            delattr(xlwings, "udfs")


def _expected():
    """name -> (params, optional params, description, argument docs), from the registry."""
    out = {}
    for f in xlcalc.all_formulas():
        out[f.udf_name] = (list(f.params), set(f.defaults), f.udf_help, [spec(p).help()[:255] for p in f.params])
    return out


def _vba_functions(vba: str) -> dict[str, str]:
    return dict(re.findall(r"^Function (\w+)\((.*)\)\s*$", vba, flags=re.M))


def test_vba_declares_every_udf_with_its_arguments(registered):
    declared = _vba_functions(registered.vba)
    expected = _expected()
    assert set(declared) == set(registered.module.UDF_NAMES)
    assert set(expected) <= set(declared)
    for name, (params, optional, _, _) in expected.items():
        want = ", ".join(("Optional " if p in optional else "") + p for p in params)
        assert declared[name] == want, name
    assert declared["TRAIN_DAYS"] == "params_b, tokens_t, peak_tflops, n_gpus, mfu"
    assert declared["MEM_STATIC_GB"] == (
        "params_b, Optional zero_stage, Optional dp, Optional tp, Optional pp, "
        "Optional bytes_weights, Optional bytes_grads, Optional bytes_optimizer"
    )
    assert declared["GPU_SPEC"] == "gpu, field"
    assert declared["GPU_LIST"] == ""
    assert registered.vba.count("\nEnd Function") == len(declared)


def test_vba_calls_python_with_every_argument(registered):
    for name, args in _vba_functions(registered.vba).items():
        names = ", ".join(a.replace("Optional ", "") for a in args.split(", ")) if args else ""
        call = f'{name} = XLPy.CallUDF("{MODULE}", "{name}", Array({names}), ThisWorkbook, Application.Caller)'
        assert call in registered.vba, name


# The questions users ask by name, in Excel's main category "xlcalc" (with the table functions: plans, budgets,
# catalogs, prices); every other formula is a building block, in "xlcalc building blocks".
QUESTIONS = {"TRAIN_FLOPS", "TRAIN_DAYS", "GPU_HOURS", "GPUS_FOR_DAYS", "MEM_PER_GPU_GB", "CLOUD_COST_USD",
             "OWN_TOTAL_COST_USD", "BREAKEVEN_UTILISATION", "TOTAL_COST_USD", "DAYS_WITH_FAILURES", "FT_TRAIN_DAYS"}


def test_macro_options_carry_description_category_and_argument_docs(registered):
    calls = {args[0]: kwargs for args, kwargs in registered.book.Application.macro_options}
    assert len(calls) == len(registered.book.Application.macro_options)  # each once
    assert set(calls) == {f"'{BOOK_NAME}'!{n}" for n in registered.module.UDF_NAMES}
    for name, (_params, _, help_text, docs) in _expected().items():
        options = calls[f"'{BOOK_NAME}'!{name}"]
        assert options["Description"] == help_text and len(help_text) <= 255
        assert options["Category"] == ("xlcalc" if name in QUESTIONS else "xlcalc building blocks"), name
        assert options["ArgumentDescriptions"] == (docs or None)
        assert all(d and "Positional argument" not in d for d in docs)
    spec_docs = calls[f"'{BOOK_NAME}'!GPU_SPEC"]
    assert spec_docs["ArgumentDescriptions"][0].startswith("GPU name or alias")
    assert "bf16_tflops" in spec_docs["ArgumentDescriptions"][1]
    for name in registered.module.CATALOG_UDFS:
        assert 0 < len(calls[f"'{BOOK_NAME}'!{name}"]["Description"]) <= 255
    main = {n.split("!")[1] for n, o in calls.items() if o["Category"] == "xlcalc"}
    assert main == QUESTIONS | {"GPU_SPEC", "MODEL_SPEC", "GPU_LIST", "MODEL_LIST", "PLAN", "LAYOUT_STEP_S", "LAYOUT_MFU",
                                "LAYOUT_TOKENS_PER_S_PER_GPU", "BUDGET_PLAN", "GPU_PRICE",
                                "GPU_PRICE_NOTE"}


def test_arguments_arrive_two_dimensional(registered):
    # ndim=2: a single cell arrives as [[x]] and a range keeps its shape (rows x columns)
    fn = registered.module.TRAIN_DAYS
    info = fn.__xlfunc__
    assert info["category"] == "xlcalc"
    assert registered.module.MEM_STATIC_GB.__xlfunc__["category"] == "xlcalc building blocks"
    assert [a["name"] for a in info["args"]] == ["params_b", "tokens_t", "peak_tflops", "n_gpus", "mfu"]
    assert all(a["options"] == {"ndim": 2} for a in info["args"])
    assert "optional" not in info["args"][0]
    opt = {a["name"]: a["optional"] for a in registered.module.MEM_STATIC_GB.__xlfunc__["args"] if "optional" in a}
    assert opt == {"zero_stage": 0, "dp": 1, "tp": 1, "pp": 1, "bytes_weights": 2, "bytes_grads": 4, "bytes_optimizer": 12}


def test_registered_functions_compute_like_the_plain_ones(registered):
    assert round(registered.module.TRAIN_DAYS([[70.0]], [[2.0]], [[312.0]], [[1024.0]], [[0.4]]), 2) == 76.08


def test_names_are_valid_in_vba_and_do_not_shadow_excel_functions(registered):
    formulas = pytest.importorskip("formulas")
    builtin = {n.upper() for n in formulas.get_functions()}
    for name in registered.module.UDF_NAMES:
        assert re.fullmatch(r"[A-Z][A-Z0-9_]{0,254}", name), name
        assert not re.fullmatch(r"[A-Z]{1,3}[0-9]+", name), f"{name} looks like a cell reference"
        assert name not in builtin, f"{name} is a built-in Excel function"
        assert name.lower() not in VBA_KEYWORDS
        for a in registered.module.__dict__[name].__xlfunc__["args"]:
            assert a["name"].lower() not in VBA_KEYWORDS, (name, a["name"])
            assert a["name"].lower() != name.lower()


def test_the_questions_are_declared_in_the_registry_and_named_in_the_docs():
    assert {f.udf_name for f in xlcalc.all_formulas() if f.question} == QUESTIONS
    text = (ROOT / "docs" / "excel.md").read_text(encoding="utf-8")
    para = text[text.index("Two categories: **xlcalc**"):text.index("**xlcalc building blocks** holds")]
    assert set(re.findall(r"`([A-Z][A-Z0-9_]+)`", para)) == QUESTIONS | {
        "PLAN", "LAYOUT_STEP_S", "LAYOUT_MFU", "LAYOUT_TOKENS_PER_S_PER_GPU", "BUDGET_PLAN", "GPU_PRICE",
        "GPU_PRICE_NOTE", "GPU_SPEC", "MODEL_SPEC", "GPU_LIST", "MODEL_LIST"}
