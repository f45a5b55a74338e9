"""Read an edited planning workbook back into the engine — treating the file as untrusted.

A workbook that arrives by email is checked before it is parsed (``package.py``: the zip's central
directory, an allow-list of parts, no macros, external links, DDE or embedded objects, bounded sizes,
compression ratios, XML depth and cells, no DTD or entities, a CPU-time budget), then parsed with XML
attacks guarded against (openpyxl uses ``defusedxml``; reading is refused without it); a file that is
not an xlcalc planning workbook is rejected with a clear message. The inputs are read through the
defined names into a :class:`Scenario`; the engine's results are compared with the values the workbook
shows, and every cell with what the builder writes for that scenario (``verify.py``).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import catalog
from ..errors import InputError
from ..frameworks import FRAMEWORKS, PRECISION_ALIASES, PRECISIONS, framework_id
from ..inputs import spec
from ..layout import preset_stage_ends
from ..lora_targets import target_set
from ..outputs import OUTPUTS
from ..planner.stacks import STACKS, stack_id
from ..scenario import INPUTS, Scenario, evaluate
from ..stack_names import name_key
from .catalogs import FRAMEWORK_DERIVED, GPU_DERIVED, MODEL_DERIVED, RECIPE_DERIVED
from .checks import EMPTY_OK
from .package import Limits, PackageError, check
from .sheets import STAGE_ENDS
from .verify import Finding, verify

MAX_FILE_BYTES = Limits.file_bytes
REL_TOL = 1e-9

TEXT_NAMES = {"Scenario_Name": "name", "Scenario_Notes": "notes", "Model_Preset": "model", "GPU_Type": "gpu",
              "Recipe_Id": "recipe", "Framework": "framework", "Precision": "precision"}


class WorkbookError(ValueError):
    """The file is not a readable xlcalc planning workbook."""


@dataclass
class Disagreement:
    name: str
    workbook: Any
    engine: Any

    def __str__(self) -> str:
        return f"{self.name}: workbook shows {self.workbook!r}, engine computes {self.engine!r}"


@dataclass
class ReadBack:
    path: str
    scenario: Scenario
    results: dict[str, Any]
    cached: dict[str, Any]
    disagreements: list[Disagreement] = field(default_factory=list)
    missing_cache: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # cells that differ from what the builder writes

    @property
    def ok(self) -> bool:
        return not self.disagreements and not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "scenario": self.scenario.model_dump(),
            "results": self.results,
            "workbook_values": self.cached,
            "disagreements": [d.__dict__ for d in self.disagreements],
            "not_recalculated": self.missing_cache,
            "changed_from_xlcalc": [{"where": f.where, "cause": f.cause} for f in self.findings],
        }


def _value(wb: Any, name: str) -> Any:
    if (dn := wb.defined_names.get(name)) is None:
        return _MISSING
    dests = list(dn.destinations)
    if len(dests) != 1 or dests[0][0] not in wb.sheetnames or ":" in dests[0][1]:
        raise WorkbookError(f"defined name {name} must name one cell, it names {dn.attr_text!r}")
    sheet, at = dests[0]
    return wb[sheet][at.replace("$", "")].value


_MISSING = object()
_NO_PRESET = re.compile(r'^=IF\((?:GPU_Type|Model_Preset|Recipe_Id|Price_Tier|Framework&Precision)="",'
                        r'(?:IF\(Framework&Precision="",)?(?P<number>[0-9.]+(?:E[+-]?[0-9]+)?|TRUE|FALSE),')


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    return a == b


def _stage_ends(data: dict[str, Any]) -> None:
    """A model preset's split of its layers on the plan's PP stages where the look-up was never calculated (as the
    workbook's First_Stage_Layers / Last_Stage_Layers compute it: xlcalc.layout.preset_stage_ends)."""
    if not data.get("model") or all(f in data for f in STAGE_ENDS):
        return
    try:
        layers = int(data["layers"]) if "layers" in data else catalog.get_model(str(data["model"])).layers
        pp = int(data.get("pp", Scenario.model_fields["pp"].default))
        ends = preset_stage_ends(layers, pp)
    except (InputError, TypeError, ValueError, ZeroDivisionError):
        return  # the scenario's own check names the input
    for name, value in zip(STAGE_ENDS, ends):
        data.setdefault(name, int(value))


def _read_price_tier(data: dict[str, Any]) -> None:
    """Price_Tier (workbooks that have it) and the price cell it fills, as the engine takes them.

    The tier's catalog rate (or a price cell not yet recalculated) keeps its tier; a price typed over the
    look-up stays a typed price (no tier); a tier the catalog has no rate for the GPU stays that tier, so the
    engine names the GPU and the tier (the cell held that message instead of a number).
    """
    tier = data.get("price_tier")
    if tier is None or "usd_per_gpu_hour" not in data:
        return
    usd = data["usd_per_gpu_hour"]
    try:
        rate = catalog.rental_price(data["gpu"], tier).usd_per_gpu_hour if data.get("gpu") else None
    except (InputError, ValueError):
        rate = None
    typed = isinstance(usd, (int, float)) and not isinstance(usd, bool)
    if (rate is None and not typed) or (rate is not None and typed and _same(usd, rate)):
        del data["usd_per_gpu_hour"]
    else:
        del data["price_tier"]


def _presets(field: str) -> tuple[str, ...]:
    """The choices whose look-up fills an input (the framework's after the recipe's for the bytes per parameter)."""
    if field in GPU_DERIVED:
        return ("gpu",)
    if field in MODEL_DERIVED or field in STAGE_ENDS:
        return ("model",)
    if field in RECIPE_DERIVED:
        return ("recipe", "framework", "precision")
    if field in FRAMEWORK_DERIVED:
        return ("framework", "precision")
    return ("price_tier",) if field == "usd_per_gpu_hour" else ()


def _sheet_ids(data: dict[str, Any]) -> None:
    """The Framework, Precision, Stack and LoRA_Targets cells hold an id: the sheet's look-ups know no other name (the
    CLI and the worksheet functions also take the names users know: xlcalc.frameworks.FRAMEWORK_ALIASES and
    PRECISION_ALIASES, planner.stacks.ALIASES, xlcalc.lora_targets); a name the sheet cannot look up is refused as
    the Checks sheet refuses it, saying which id it means."""
    problems = []
    for key, ids, dropdown, means in (("framework", FRAMEWORKS, "the Framework dropdown), or empty", framework_id),
                                      ("precision", (*PRECISIONS, "default"), "the Precision dropdown), or empty",
                                       lambda name: PRECISION_ALIASES.get(name_key(name), "")),
                                      ("stack", STACKS, "the Stack dropdown)", stack_id),
                                      ("lora_targets", spec("lora_targets").choices, "the LoRA_Targets dropdown)",
                                       target_set)):
        typed = data.get(key)
        if isinstance(typed, str) and typed.strip() and typed.strip().lower() not in ids:
            try:
                meant = means(typed)
            except InputError:  # a name the CLI refuses as well
                meant = ""
            close = difflib.get_close_matches(typed.strip().lower(), ids, n=1, cutoff=0.6)
            problems.append(InputError(key, typed, f"one of {', '.join(ids)} ({dropdown}",
                                       f"the workbook's look-ups take the {key}'s id: pick {meant}" if meant in ids
                                       else f"did you mean {close[0]}?" if close else ""))
    if problems:
        raise InputError.all(problems)


def read_workbook(path: str | Path) -> ReadBack:
    """Load an edited planning workbook; return its scenario, the engine's results and any disagreement."""
    import openpyxl

    if not openpyxl.DEFUSEDXML:
        raise WorkbookError("refusing to read an untrusted workbook without defusedxml (pip install defusedxml)")
    path = Path(path)
    try:  # oversized files, zip bombs, foreign or hostile packages refused before anything is parsed (package.py)
        check(path, Limits(file_bytes=MAX_FILE_BYTES))
    except PackageError as exc:
        raise WorkbookError(str(exc)) from None
    try:  # the cells' values, then their formulas (the package checks bound both loads)
        wb = openpyxl.load_workbook(path, data_only=True, read_only=False, keep_links=False)
        formulas = openpyxl.load_workbook(path, read_only=False, keep_links=False)
    except Exception as exc:  # openpyxl raises many types on malformed parts
        raise WorkbookError(f"{path}: cannot be read as a workbook ({type(exc).__name__}: {exc})") from None
    try:
        if missing := [c.name for c in INPUTS if c.name not in wb.defined_names]:
            raise WorkbookError(f"{path}: not an xlcalc planning workbook (missing defined names: "
                                f"{', '.join(missing[:6])}{' ...' if len(missing) > 6 else ''})")
        data: dict[str, Any] = {key: str(v) for name, key in TEXT_NAMES.items()
                                if (v := _value(wb, name)) is not _MISSING and v is not None and v != ""}
        tier = _value(wb, "Price_Tier")
        if tier is not _MISSING and tier is not None and str(tier).strip():
            data["price_tier"] = str(tier).strip()
        for cell in INPUTS:
            v = _value(wb, cell.name)
            if cell.field == "capex_usd_per_gpu" and (v is None or str(v).startswith("capex_usd_per_gpu = (empty)")):
                continue  # looked up from GPU_Type (not yet calculated), or the GPU has none: the engine does the same
            presets = _presets(cell.field)
            picked = any(data.get(k) for k in presets)  # a choice whose look-up fills the input is picked
            if isinstance(v, str) and cell.field in FRAMEWORK_DERIVED and picked:
                continue  # the look-up's message (no such framework and precision): the engine names the input
            if cell.name in EMPTY_OK and v in (None, 0):
                continue  # not given (the global batch of a model with none published): the scenario's None
            if v is None:
                if picked:
                    continue  # a look-up not yet recalculated: the preset fills it, as in the workbook
                # no preset picked: the look-up cell's own number, IF(preset="", number, ...)
                if presets and (m := _NO_PRESET.match(str(_value(formulas, cell.name) or ""))):
                    number = m["number"]
                    data[cell.field] = number == "TRUE" if number in ("TRUE", "FALSE") else float(number)
                    continue
                raise InputError(cell.name, None, "a value (the cell is empty or was never calculated)")
            data[cell.field] = v
        _read_price_tier(data)
        _sheet_ids(data)
        _stage_ends(data)
        scenario = Scenario.build(**data)
        results = evaluate(scenario)
        rb = ReadBack(str(path), scenario, results, {})
        for out in OUTPUTS:
            v = rb.cached[out.name] = _value(wb, out.name)
            if v is _MISSING:
                raise WorkbookError(f"{path}: not an xlcalc planning workbook (missing defined name {out.name})")
            if v is None:
                rb.missing_cache.append(out.name)
            elif not _same(v, results[out.name]):
                rb.disagreements.append(Disagreement(out.name, v, results[out.name]))
        rb.findings = verify(formulas, scenario)
        return rb
    finally:
        wb.close()
        formulas.close()
