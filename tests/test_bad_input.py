"""Bad input on every face: each mistake gets a message naming the input, the value and what is allowed.

The suite builds its cases from the input specs (out of range, past the upper bound, NaN/inf, text,
TRUE/FALSE for a number, fractional counts, percentages typed for fractions, empty cells and flags,
every missing input at once, layouts that do not split) across the Python API, the worksheet
functions and the command line, runs them all and counts: a *silent* result is a number returned
where an error was due, an *unclear* one an error that does not name the input, the value and the
allowed range, a *traceback* any other exception. All three must be 0, over at least 200 cases.
Hypothesis then draws further bad values for every input of every formula.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xlcalc
import xlcalc.validate
from strategies import bad_value_for
from xlcalc.cli import main
from xlcalc.errors import InputError
from xlcalc.inputs import spec
from xlcalc.scenario import INPUTS, STEP_GROUP, Scenario

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "udfs") not in sys.path:
    sys.path.insert(0, str(ROOT / "udfs"))

FORMULAS = xlcalc.all_formulas()
NUMBER = ("float", "int")


@dataclass
class Case:
    face: str                      # python | udf | cli
    label: str
    run: Callable[[], Any]         # returns the result, or raises
    names: tuple[str, ...]         # inputs the message must name
    value: Any = None              # the value it must show (None: "(empty)")
    allowed: tuple[str, ...] = ()  # words of what is allowed it must say
    extra: tuple[str, ...] = ()    # further words (e.g. the percentage hint)
    outcome: str = field(default="", init=False)
    message: str = field(default="", init=False)


def _value_texts(value: Any) -> list[str]:
    """The ways a message may show a value (an independent spelling, not the engine's)."""
    if value is None:
        return ["(empty)"]
    if isinstance(value, str):
        return [repr(value)]
    if isinstance(value, float) and math.isnan(value):
        return ["nan"]
    if isinstance(value, float) and math.isinf(value):
        return ["-inf" if value < 0 else "inf"]
    if isinstance(value, bool):
        return [repr(value)]
    texts = [repr(value), f"{value:g}", str(value)]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        texts.append(str(int(value)))
    return texts


def judge(case: Case) -> Case:
    """Run one case and say what happened: clear | silent | unclear | traceback."""
    try:
        result = case.run()
    except (InputError, ValueError, KeyError) as exc:
        message = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        case.message = message
        case.outcome = "clear" if _clear(case, message) else "unclear"
        return case
    except Exception as exc:  # noqa: BLE001 - anything else would reach the user as a traceback
        case.message = f"{type(exc).__name__}: {exc}"
        case.outcome = "traceback"
        return case
    if isinstance(result, tuple) and len(result) == 3:  # the command line: (exit code, stdout, stderr)
        code, _, err = result
        case.message = err
        if code == 0:
            case.outcome = "silent"
        elif "Traceback" in err or "error:" not in err:
            case.outcome = "traceback"
        else:
            case.outcome = "clear" if _clear(case, err) else "unclear"
        return case
    if isinstance(result, str) and result.startswith("#VALUE!"):  # a worksheet cell showing the message
        case.message = result
        case.outcome = "clear" if _clear(case, result) else "unclear"
        return case
    case.message = repr(result)[:200]
    case.outcome = "silent"
    return case


def _clear(case: Case, message: str) -> bool:
    if not all(f"{n} = " in message for n in case.names):
        return False
    if case.value is not None or case.names:
        if not any(t in message for t in _value_texts(case.value)):
            return False
    return all(a in message for a in case.allowed) and all(e in message for e in case.extra)


# -- values to try ----------------------------------------------------------------------

def bad_values(name: str) -> list[tuple[Any, tuple[str, ...]]]:
    """(bad value, extra words the message must carry) for one number input."""
    s = spec(name)
    out: list[tuple[Any, tuple[str, ...]]] = [(math.nan, ("not a finite number",)), (math.inf, ()),
                                              ("abc", ("text, not a number",)), (True, ())]
    if s.gt is not None:
        out.append((s.gt - 1.0 if s.kind == "int" else s.gt - 0.5, ()))
    elif s.ge is not None:
        out.append((s.ge - 1.0, ()))
    if s.le is not None:
        if s.is_fraction:
            out.append((5.0, ("for 5% type 0.05",)))
        elif s.limit_reason:
            out.append((s.le * 1000, ("the upper bound is",)))
        else:
            out.append((s.le + 1.0, ()))
    if s.kind == "int":
        out.append((2.5, ("fractional",)))
    return out


def _example(name: str) -> Any:
    return spec(name).example


def _callable_base(f) -> dict[str, Any] | None:
    """Typical values (the inputs' examples) that the formula accepts, or None."""
    base = {p: f.defaults.get(p, _example(p)) for p in f.params}
    try:
        f(**base)
    except (InputError, ValueError):
        return None
    return base


# -- the Python API ---------------------------------------------------------------------

def python_cases() -> list[Case]:
    cases = []
    for f in FORMULAS:
        base = _callable_base(f)
        if base is None:
            continue
        required = [p for p in f.params if p not in f.defaults]
        if required:
            cases.append(Case("python", f"{f.name}() with no inputs", lambda f=f: f(), tuple(required),
                              None, ("the input is required",)))
        numbers = [p for p in f.params if spec(p).kind in NUMBER]
        for p in numbers[:2]:
            for value, extra in bad_values(p):
                cases.append(Case("python", f"{f.name}({p}={value!r})",
                                  lambda f=f, p=p, v=value, b=base: f(**{**b, p: v}), (p,), value,
                                  (spec(p).allowed,), extra))
        for p in f.params:
            if spec(p).kind == "choice":
                cases.append(Case("python", f"{f.name}({p}='sometimes')",
                                  lambda f=f, p=p, b=base: f(**{**b, p: "sometimes"}), (p,), "sometimes",
                                  (spec(p).allowed,)))
    cases.append(Case("python", "get_formula('trian_days')", lambda: xlcalc.get_formula("trian_days"),
                      ("formula",), "trian_days", ("known formula",), ("train_days",)))
    cases.append(Case("python", "get_formula('nope')", lambda: xlcalc.get_formula("nope"),
                      ("formula",), "nope", ("known formula",)))
    cases.append(Case("python", "train_days(mfuu=0.4)", lambda: xlcalc.train_days(70, 2, 312, 1024, mfuu=0.4),
                      ("mfuu",), 0.4, ("inputs of train_days",), ("did you mean mfu",)))
    cases.append(Case("python", "train_days(1e5 B, 1e3 T, tiny peak): no finite result",
                      lambda: xlcalc.train_days(1e5, 1e3, 1e-300, 1, 0.001), ("peak_tflops",), 1e-300,
                      ("finite result",)))
    from xlcalc.planner import plan

    cases.append(Case("python", "plan() with nothing", lambda: plan(), ("model", "gpu", "global_batch_tokens"),
                      None, ("the input is required",)))
    cases.append(Case("python", "plan(n_gpu=64)", lambda: plan("llama2-70b", gpu="h100", seq_len=4096,
                      global_batch_tokens=4e6, n_gpu=64), ("n_gpu",), 64, ("inputs of plan",), ("n_gpus",)))
    cases.append(Case("python", "plan(global_batch_tokens='4e6')", lambda: plan(
        "llama2-70b", gpu="h100", seq_len=4096, global_batch_tokens="4e6", n_gpus=64), ("global_batch_tokens",),
        "4e6", (spec("global_batch_tokens").allowed,)))
    cases.append(Case("python", "plan(deadline_days=-3)", lambda: plan(
        "llama2-70b", gpu="h100", seq_len=4096, global_batch_tokens=4e6, deadline_days=-3), ("deadline_days",),
        -3, (spec("days").allowed,)))
    cases.append(Case("python", "Scenario.build(gpu='')", lambda: Scenario.build(gpu=""), ("gpu",), ""))
    cases.append(Case("python", "Scenario.build(model=' ')", lambda: Scenario.build(model=" "), ("model",), " "))
    cases.append(Case("python", "Scenario.build(spare_frac=5, failure_frac=10)",
                      lambda: Scenario.build(spare_frac=5, failure_frac=10), ("spare_frac", "failure_frac"), 5,
                      ("<= 1",), ("for 5% type 0.05", "for 10% type 0.1")))
    cases.append(Case("python", "Scenario.build(tp=3)", lambda: Scenario.build(tp=3), ("tp",), 3,
                      ("a divisor of heads = 64",)))
    cases.append(Case("python", "Scenario.build(pp=7)", lambda: Scenario.build(pp=7, tp=8), ("pp",), 7,
                      ("layers = 80",)))
    return cases


# -- the worksheet functions ---------------------------------------------------------------

def _udfs():
    pytest.importorskip("xlwings")
    return importlib.import_module("xlcalc_udfs")


def udf_cases() -> list[Case]:
    udfs = _udfs()
    cases = []
    for f in FORMULAS:
        base = _callable_base(f)
        if base is None:
            continue
        fn = getattr(udfs, f.udf_name)
        args = [base[p] for p in f.params]
        required = [p for p in f.params if p not in f.defaults]
        if required:
            empty = [None] * len(f.params)
            cases.append(Case("udf", f"={f.udf_name}(empty cells)", lambda fn=fn, e=empty: fn(*e),
                              tuple(required), None, ("the cell is empty",)))
        numbers = [i for i, p in enumerate(f.params) if spec(p).kind in NUMBER]
        for i in numbers[:1]:
            p = f.params[i]
            for value, extra in bad_values(p):
                bad = list(args)
                bad[i] = value
                cases.append(Case("udf", f"={f.udf_name}({p}={value!r})", lambda fn=fn, a=bad: fn(*a), (p,), value,
                                  (spec(p).allowed,), extra))
            # a column with one bad row: that cell says why, the others stay numbers
            value, extra = bad_values(p)[-1]
            column = [[args[i]], [value], [args[i]]]
            col_args = list(args)
            col_args[i] = column
            cases.append(Case("udf", f"={f.udf_name}({p}=column with {value!r} in row 2)",
                              lambda fn=fn, a=col_args: _row_two(fn(*a)), (p,), value, (spec(p).allowed,), extra))
    tables = importlib.import_module("xlcalc_udf_tables")
    cases.append(Case("udf", "=PLAN('llama2-70b', 'h100', 64, 4096, 'lots')",
                      lambda: tables.PLAN("llama2-70b", "h100", 64, 4096, "lots"), ("global_batch_tokens",), "lots"))
    cases.append(Case("udf", "=BUDGET_PLAN(1e6, 2, 989, 40, 90)", lambda: tables.BUDGET_PLAN(1e6, 2, 989, 40, 90),
                      ("mfu",), 40, ("<= 1",), ("for 40% type 0.4",)))
    return cases


def _row_two(out: Any) -> Any:
    assert isinstance(out, list) and len(out) == 3, out
    for k in (0, 2):  # the good rows still compute
        assert not (isinstance(out[k][0], str) and out[k][0].startswith("#VALUE!")), out
    return out[1][0]


# -- the command line ----------------------------------------------------------------------

def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse's own usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def _flag(v: Any) -> str:
    return v if isinstance(v, str) else repr(v) if isinstance(v, float) and not math.isfinite(v) else f"{v}"


def cli_cases() -> list[Case]:
    cases = []
    for cell in INPUTS:  # estimate: every scenario input; the step time's (stack, global batch): plan, which has one
        s = spec(cell.spec_name)
        if s.kind not in NUMBER:
            continue
        argv = ("plan", "--model", "llama3.1-8b", "--gpu", "h100", "--n-gpus", "8") if cell.group == STEP_GROUP \
            else ("estimate",)
        for value, extra in bad_values(cell.spec_name):
            if isinstance(value, bool):
                continue  # a flag's text "True" is text, covered by "abc"
            text = _flag(value)
            if text == "":
                continue
            shown = text if isinstance(value, str) else value
            cases.append(Case("cli", f"{argv[0]} --{cell.field.replace('_', '-')} {text}",
                              lambda c=cell, t=text, a=argv: cli(*a, f"--{c.field.replace('_', '-')}={t}"),
                              (cell.field,), shown, (s.allowed,), extra))
    memory = [("tp", "3", "a divisor of heads = 64"), ("pp", "7", "a divisor of layers = 80"),
              ("cp", "3", "a divisor of seq_len"), ("memory-gb", "inf", "<= 100,000"),
              ("memory-gb", "-80", "> 0"), ("micro-batch", "0", ">= 1"), ("zero-stage", "4", "<= 3"),
              ("n-gpus", "1001", "a multiple of TP x PP x CP"), ("n-gpus", "0", ">= 1"),
              ("global-batch", "0", ">= 1"), ("layers", "1e9", "<= 10,000"),
              ("seq-len", "2048.5", "whole number"), ("overhead-gb", "nan", "finite")]
    for flag, text, words in memory:
        name = flag.replace("-", "_")
        value = text if not _is_number(text) else float(text) if not float(text).is_integer() or "e" in text \
            or text in ("inf", "nan") else int(float(text))
        args = ["memory", "--model", "llama2-70b", f"--{flag}={text}"] + (["--tp", "8"] if flag in ("pp", "n-gpus")
                                                                             else [])
        cases.append(Case("cli", " ".join(args), lambda a=args: cli(*a), (name,), value, (words,)))
    for command in ("estimate", "memory", "plan", "cost", "budget"):
        for flag in ("--gpu", "--model") if command in ("estimate", "memory", "plan") else ("--gpu",):
            base = {"plan": ["--seq-len", "4096", "--global-batch-tokens", "4e6", "--gpus", "64"],
                    "budget": ["--budget-usd", "1e6", "--usd-per-gpu-hour", "2"]}.get(command, [])
            if command == "plan" and flag == "--model":
                base = base + ["--gpu", "h100"]
            args = [command, *base, flag, ""]
            cases.append(Case("cli", " ".join(args[:1] + [flag, "''"]), lambda a=args: cli(*a),
                              (flag[2:],), "", ("not empty",)))
    plan_base = ["plan", "--model", "llama2-70b", "--gpu", "h100", "--seq-len", "4096", "--global-batch-tokens", "4e6"]
    cases += [
        Case("cli", "plan --deadline-days -3", lambda: cli(*plan_base, "--deadline-days", "-3"), ("deadline_days",),
             -3, ("> 0",)),
        Case("cli", "plan --gpus 1e9", lambda: cli(*plan_base, "--gpus", "1000000000"), ("n_gpus",), 1000000000,
             ("<= 10,000,000",)),
        Case("cli", "plan --tp 3", lambda: cli(*plan_base, "--gpus", "64", "--tp", "3"), ("tp",), 3,
             ("a divisor of heads",)),
        Case("cli", "plan --link-efficiency -1 --dp-overlap 7",
             lambda: cli(*plan_base, "--gpus", "64", "--link-efficiency", "-1", "--dp-overlap", "7"),
             ("link_efficiency", "dp_overlap"), -1, ("> 0",)),
        Case("cli", "plan without --model or the architecture",
             lambda: cli("plan", "--gpu", "h100", "--seq-len", "4096", "--global-batch-tokens", "4e6", "--gpus", "8"),
             ("layers", "hidden", "heads"), None, ("the input is required",)),
        Case("cli", "plan --global-batch-tokens lots",
             lambda: cli("plan", "--model", "llama2-70b", "--gpu", "h100", "--seq-len", "4096",
                         "--global-batch-tokens", "lots", "--gpus", "64"), ("global_batch_tokens",), "lots"),
        Case("cli", "cost --utilisation 70", lambda: cli("cost", "--gpu", "h100", "--utilisation", "70"), ("utilisation",),
             70, ("<= 1",), ("for 70% type 0.7",)),
        Case("cli", "cost --n-gpus 0", lambda: cli("cost", "--gpu", "h100", "--n-gpus", "0"), ("n_gpus",), 0, (">= 1",)),
        Case("cli", "cost --usd-per-gpu-hour -2", lambda: cli("cost", "--gpu", "h100", "--usd-per-gpu-hour", "-2"),
             ("usd_per_gpu_hour",), -2, (">= 0",)),
        Case("cli", "budget --mfu 40", lambda: cli("budget", "--budget-usd", "1e6", "--gpu", "h100", "--mfu", "40"),
             ("mfu",), 40, ("<= 1",), ("for 40% type 0.4",)),
        Case("cli", "budget --mfu 40%", lambda: cli("budget", "--budget-usd", "1e6", "--gpu", "h100", "--mfu", "40%"),
             ("mfu",), "40%", ("<= 1",), ("text, not a number; for 40% type 0.4",)),
        Case("cli", "cost --utilisation '85 %'", lambda: cli("cost", "--utilisation", "85 %"), ("utilisation",),
             "85 %", ("<= 1",), ("for 85% type 0.85",)),
        Case("cli", "estimate --tokens-t 2% (not a fraction: no hint)", lambda: cli("estimate", "--tokens-t", "2%"),
             ("tokens_t",), "2%", ("<= 1,000",), ("(text, not a number)",)),
        Case("cli", "budget --budget-usd 1e30", lambda: cli("budget", "--budget-usd", "1e30", "--gpu", "h100"),
             ("budget_usd",), 1e30, ("<= 1e+13",)),
        Case("cli", "goodput --interruptions 5 (no run)", lambda: cli("goodput", "--interruptions", "5"),
             ("over_days", "over_gpus"), None, ("given with --interruptions",)),
        Case("cli", "goodput --n-gpus nan", lambda: cli("goodput", "--n-gpus", "nan"), ("n_gpus",), math.nan),
        Case("cli", "goodput --save-s -60", lambda: cli("goodput", "--save-s", "-60"), ("save_s",), -60, ("> 0",)),
    ]
    return cases


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# -- the suite ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def judged() -> list[Case]:
    return [judge(c) for c in python_cases() + udf_cases() + cli_cases()]


def _report(cases: list[Case], outcome: str) -> str:
    bad = [c for c in cases if c.outcome == outcome]
    return "\n".join(f"[{c.face}] {c.label}: {c.message[:300]}" for c in bad[:25])


def test_at_least_200_bad_inputs_on_every_face_and_none_gives_a_silent_number(judged):
    faces = {face: sum(1 for c in judged if c.face == face) for face in ("python", "udf", "cli")}
    assert len(judged) >= 200 and all(n >= 50 for n in faces.values()), faces
    assert sum(c.outcome == "silent" for c in judged) == 0, _report(judged, "silent")


def test_every_bad_input_gets_a_message_naming_the_input_the_value_and_what_is_allowed(judged):
    assert sum(c.outcome == "unclear" for c in judged) == 0, _report(judged, "unclear")


def test_no_bad_input_raises_anything_but_the_input_error(judged):
    assert sum(c.outcome == "traceback" for c in judged) == 0, _report(judged, "traceback")


def test_messages_are_in_one_format_without_pydantic_words(judged):
    for c in judged:
        assert "Input should be" not in c.message and "must be Input" not in c.message, c.label
        assert "validation error" not in c.message and "errors.pydantic.dev" not in c.message, c.label


def test_every_missing_input_is_named_at_once():
    with pytest.raises(InputError) as info:
        xlcalc.train_days(70)
    assert info.value.names == ["tokens_t", "peak_tflops", "n_gpus", "mfu"]
    with pytest.raises(ValueError) as cell:
        _udfs().TRAIN_DAYS(None, 2, None, 1024, None)
    assert [p.name for p in cell.value.problems] == ["params_b", "peak_tflops", "mfu"]
    code, _, err = cli("plan", "--gpu", "h100", "--seq-len", "4096", "--global-batch-tokens", "4e6", "--gpus", "8")
    assert code == 2 and all(f"  - {n} = (empty)" in err for n in ("layers", "hidden", "heads")), err


def test_a_percentage_typed_for_a_fraction_is_refused_with_the_fraction_it_meant():
    # the money path: --spare-frac 5 meant 5% spares, not 500% (5,280 GPUs instead of ~909)
    code, out, err = cli("estimate", "--spare-frac", "5")
    assert code == 2 and out == ""
    assert "spare_frac = 5 is not allowed" in err and "for 5% type 0.05" in err
    assert cli("estimate", "--spare-frac", "0.05")[0] == 0


def test_upper_bounds_say_why():
    for s in xlcalc.inputs.all_specs().values():
        if s.kind in NUMBER and s.le is not None and not s.is_fraction and s.limit_reason:
            with pytest.raises(InputError, match="the upper bound is"):
                xlcalc.validate.check_value(s.name, s.le * 10)
            assert xlcalc.validate.check_value(s.name, s.le) == s.le  # the bound itself is allowed


def test_every_input_a_person_types_has_an_upper_bound():
    typed = {c.spec_name for c in INPUTS} | {p for f in FORMULAS for p in f.params}
    derived = {"gpu_hours", "bytes", "intensity", "size_bytes", "gpus_needed", "base_value", "compute_s", "comm_s",
               "window_s", "microbatch_s", "step_s", "tokens_per_s", "gemm_bytes", "softmax_bytes",
               "layer_act_bytes", "logits_bytes", "stored_act_bytes", "full_act_bytes",
               # the step-time chain's terms of one micro-batch (MICROBATCH_TIME_S), each a result of another formula
               "layer_s", "layer_matmul_s", "layer_attention_s", "layer_elementwise_s", "logits_s", "tp_comm_s", "cp_comm_s",
               "pp_comm_s"}
    unbounded = sorted(n for n in typed - derived if spec(n).kind in NUMBER and spec(n).le is None
                       and spec(n).lt is None)
    assert unbounded == []


def test_cli_errors_through_the_console_entry_have_no_traceback():
    for argv in (["estimate", "--params-b", "1e30"], ["estimate", "--gpu", ""], ["memory", "--memory-gb", "inf",
                 "--model", "llama2-70b"], ["plan", "--gpu", "h100"]):
        proc = subprocess.run([sys.executable, "-m", "xlcalc", *argv], capture_output=True, text=True, cwd=ROOT)
        assert proc.returncode == 2, (argv, proc.stdout)
        assert "Traceback" not in proc.stderr and "error" in proc.stderr, proc.stderr


# -- property-based: hypothesis draws the bad values ------------------------------------------

_WITH_BASE = [(f, b) for f in FORMULAS if (b := _callable_base(f)) is not None]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_bad_value_of_any_input_of_any_formula_is_refused_by_name(data):
    f, base = data.draw(st.sampled_from(_WITH_BASE), label="formula")
    p = data.draw(st.sampled_from(f.params), label="input")
    value = data.draw(bad_value_for(spec(p)), label="value")
    with pytest.raises(InputError) as info:
        f(**{**base, p: value})
    assert p in info.value.names
    assert spec(p).allowed in str(info.value)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_bad_cell_of_any_worksheet_function_shows_a_message_naming_it(data):
    udfs = _udfs()
    f, base = data.draw(st.sampled_from(_WITH_BASE), label="formula")
    i = data.draw(st.integers(0, len(f.params) - 1), label="input")
    p = f.params[i]
    value = data.draw(bad_value_for(spec(p)), label="value")
    args = [base[q] for q in f.params]
    args[i] = value
    with pytest.raises(ValueError) as info:
        getattr(udfs, f.udf_name)(*args)
    assert f"{p} = " in str(info.value) and spec(p).allowed in str(info.value)


# -- xlcalc read: a workbook that disagrees ------------------------------------------------

def test_read_lists_every_cell_that_disagrees_and_exits_non_zero(tmp_path):
    import openpyxl

    from xlcalc.scenario import load_scenario
    from xlcalc.workbook import build, cache

    path = tmp_path / "planner.xlsx"
    build(path, [load_scenario(ROOT / "xlcalc" / "presets" / "seed002-70b-a800.toml")])
    wb = openpyxl.load_workbook(path)
    where = {n: next(iter(wb.defined_names[n].destinations)) for n in ("Train_Days", "GPU_Hours", "Total_Cost_USD")}
    cache.inject(path, {(sheet, cell.replace("$", "")): 99.0 for sheet, cell in where.values()})
    code, out, _ = cli("read", str(path))
    assert code == 1
    listed = out.split("DISAGREEMENTS between the workbook and the engine:")[1]
    assert all(name in listed for name in where), out
    code, out, _ = cli("read", str(path), "--json")
    import json

    assert code == 1 and {d["name"] for d in json.loads(out)["disagreements"]} >= set(where)
