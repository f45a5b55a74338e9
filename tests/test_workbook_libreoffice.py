"""Proof in a real spreadsheet engine: LibreOffice recalculates the workbook to the engine's numbers.

One ``soffice`` call converts every test file (2-core machines): the seed 002 workbook as built,
workbooks whose inputs were changed through the defined names, one whose GPU type was switched
in the dropdown cell, two whose precision recipe was switched (one with a byte count typed over
its look-up), and one built from a hostile scenario. Each input file carries a stale-cache
canary (a deliberately wrong cached value) that must come back correct.
Skips where LibreOffice is absent, except under CI=true, where it fails.
"""

from __future__ import annotations

import atexit
import functools
import json
import math
import random
import re
import shutil
import tempfile
from pathlib import Path

import openpyxl
import pytest

import lo_batch
import xlcalc
from chart_data import chart_data_cells, chart_data_rows
from named_edits import Edits
from requires import require
from xlcalc import catalog
from xlcalc.cli import main as xlcalc_main
from xlcalc.outputs import OUTPUT_BY_NAME, OUTPUTS
from xlcalc.recipes import RECIPES
from xlcalc.scenario import INPUT_BY_NAME, INPUTS, Scenario, evaluate, load_scenario
from xlcalc.workbook import build, cache
from xlcalc.workbook.compare import gpu_variant
from xlcalc.workbook.rendering import dependencies
from xlcalc.workbook.sheets import KEY_RESULTS

ROOT = Path(__file__).resolve().parent.parent
SEED002 = ROOT / "xlcalc" / "presets" / "seed002-70b-a800.toml"
CANARY = {("Time", "B6"): 12345.0, ("Memory", "B23"): -1.0}  # Train_Days, Mem_Total_GB cached wrong
HOSTILE_NAME = '=HYPERLINK("http://example.invalid","click")'
N_GENERATED = 4
# a GPU with a sourced rate at each tier (the catalog's rows), picked in GPU_Type and Price_Tier as a user would
TIER_PICKS = {"on-demand": "h100-sxm", "reserved-1y": "a100-40gb", "reserved-3y": "h100-sxm", "spot": "a100-80gb",
              "capacity-block": "h200", "assumed": "h800"}


require_libreoffice = lo_batch.require_libreoffice


def tier_scenario(base: Scenario, gpu: str, tier: str) -> Scenario:
    """The Inputs plan on another GPU priced at a tier: what picking GPU_Type and Price_Tier means to the engine."""
    data = gpu_variant(base, gpu).model_dump(exclude={"usd_per_gpu_hour", "price_tier", "price_id"})
    return Scenario.build(**{**data, "name": base.name, "price_tier": tier})


def generated_scenario(rng: random.Random, k: int) -> Scenario:
    """An unseen, valid plan (values rounded to 6 significant digits)."""
    def r6(x: float) -> float:
        return float(f"{x:.6g}")

    heads = rng.choice([16, 32, 40, 64, 96, 128])
    tp = rng.choice([t for t in (1, 2, 4, 8) if heads % t == 0])
    pp = rng.choice([1, 2, 4, 8])
    return Scenario(
        name=f"generated plan {k}", notes="random inputs written through the defined names",
        params_b=r6(rng.uniform(1, 1000)), tokens_t=r6(rng.uniform(0.1, 20)),
        seq_len=rng.choice([1024, 2048, 4096, 8192]), hidden=heads * rng.choice([64, 128]),
        layers=pp * rng.randint(max(1, 8 // pp), 128 // pp), heads=heads, peak_tflops=r6(rng.uniform(100, 2000)),
        gpu_memory_gb=rng.choice([40, 64, 80, 141, 192]), n_gpus=tp * pp * rng.randint(1, 300),
        gpus_per_node=rng.choice([4, 8, 16]), mfu=r6(rng.uniform(0.1, 0.7)), tp=tp, pp=pp,
        zero_stage=rng.randint(0, 3), seq_parallel=rng.random() < 0.5,
        recompute=rng.choice(["none", "selective", "op_selective", "full"]), micro_batch=rng.randint(1, 8),
        bytes_weights=rng.choice([1, 2, 4]), bytes_grads=rng.choice([2, 4]), bytes_optimizer=rng.choice([8, 12, 16]),
        overhead_gb=r6(rng.uniform(0, 10)), deadline_days=r6(rng.uniform(10, 200)),
        spare_frac=r6(rng.uniform(0, 0.2)), usd_per_gpu_hour=r6(rng.uniform(0.5, 10)),
        kw_per_gpu=r6(rng.uniform(0.3, 1.5)), pue=r6(rng.uniform(1, 2)), usd_per_kwh=r6(rng.uniform(0, 0.3)),
        failure_frac=r6(rng.uniform(0, 0.3)), experiments_frac=r6(rng.uniform(0, 1)),
        data_usd=r6(rng.uniform(0, 1e7)), people_usd=r6(rng.uniform(0, 1e7)), other_usd=r6(rng.uniform(0, 1e6)),
        budget_usd=r6(rng.uniform(1e6, 1e9)),
        capex_usd_per_gpu=r6(rng.uniform(5000, 60000)),  # typed: no GPU preset to look a purchase price up for
    )


def named_cell(wb, name):
    (sheet, at), = wb.defined_names[name].destinations
    return wb[sheet][at.replace("$", "")]


def set_inputs(src: Edits, dst: Path, values: dict) -> None:
    """Write values into the cells the defined names point to (as a script or a user would), save as ``dst``."""
    src.save(dst, values, text=True)


@lo_batch.register("workbook")
def _produce(work: Path) -> tuple[list[Path], dict]:
    """The test files, for the session's one LibreOffice run (tests/lo_batch.py)."""
    src = work / "in"
    src.mkdir()
    base_sc = load_scenario(SEED002)
    pristine = work / "pristine.xlsx"
    base = build(pristine, [base_sc])
    book = Edits(pristine)  # loaded once; each set_inputs saves its own edits
    cases: dict[str, dict] = {}

    seed = src / "seed002.xlsx"
    shutil.copy(pristine, seed)
    cases["seed002"] = {"scenario": base_sc, "pristine": pristine}

    rng = random.Random(20240611)
    for k in range(N_GENERATED):
        sc = generated_scenario(rng, k)
        values = {c.name: getattr(sc, c.field) for c in INPUTS}
        values.update(Scenario_Name=sc.name, Scenario_Notes=sc.notes, GPU_Type="", Model_Preset="", Recipe_Id="")
        set_inputs(book, src / f"gen{k}.xlsx", values)
        cases[f"gen{k}"] = {"scenario": sc}

    set_inputs(book, src / "gpu_switch.xlsx", {"GPU_Type": "ascend-910b"})
    cases["gpu_switch"] = {"scenario": gpu_variant(base_sc, "ascend-910b").model_copy(update={"name": base_sc.name})}

    no_bytes = base_sc.model_dump(exclude={"bytes_weights", "bytes_grads", "bytes_optimizer"})
    set_inputs(book, src / "recipe_megatron.xlsx", {"Recipe_Id": "megatron"})
    cases["recipe_megatron"] = {"scenario": Scenario.build(**{**no_bytes, "recipe": "megatron"})}
    set_inputs(book, src / "recipe_override.xlsx", {"Recipe_Id": "megatron", "Bytes_Grads": 3})
    cases["recipe_override"] = {"scenario": Scenario.build(**{**no_bytes, "recipe": "megatron", "bytes_grads": 3})}

    for tier, gpu in TIER_PICKS.items():
        set_inputs(book, src / f"tier_{tier}.xlsx", {"GPU_Type": gpu, "Price_Tier": tier})
        cases[f"tier_{tier}"] = {"scenario": tier_scenario(base_sc, gpu, tier)}
    # a price typed over the tier's look-up wins, and the sheet says so
    set_inputs(book, src / "tier_typed.xlsx", {"GPU_Type": "h100-sxm", "Price_Tier": "spot", "USD_per_GPU_Hour": 3.1})
    cases["tier_typed"] = {"scenario": gpu_variant(base_sc, "h100-sxm").model_copy(
        update={"name": base_sc.name, "usd_per_gpu_hour": 3.1, "price_tier": None, "price_id": None})}

    # `xlcalc workbook` (the CLI face of build_workbook.py) given a scenario file of its own: its cached values must
    # be those of the inputs it wrote (2,048 GPUs), not of the seed's 1,024
    cli_toml = work / "seed002-2048.toml"
    cli_toml.write_text(SEED002.read_text(encoding="utf-8").replace("n_gpus = 1024", "n_gpus = 2048"),
                        encoding="utf-8")
    cli_sc = load_scenario(cli_toml)
    assert cli_sc.n_gpus == 2048
    cli_pristine = work / "cli-2048.xlsx"
    assert xlcalc_main(["workbook", "--scenario", str(cli_toml), "-o", str(cli_pristine)]) == 0
    shutil.copy(cli_pristine, src / "cli_2048.xlsx")
    cases["cli_2048"] = {"scenario": cli_sc, "pristine": cli_pristine}

    hostile = Scenario.build(name=HOSTILE_NAME, notes="@SUM(1)+2", gpu="h100")
    build(src / "hostile.xlsx", [hostile])
    cases["hostile"] = {"scenario": hostile}

    # every model preset and every GPU of the dropdowns, picked in the cells as a user would
    gpu_ids, model_ids = [g.id for g in catalog.gpus()], [m.id for m in catalog.models()]
    for k in range(max(len(gpu_ids), len(model_ids))):
        picks = {"Model_Preset": model_ids[k % len(model_ids)], "GPU_Type": gpu_ids[k % len(gpu_ids)],
                 "Price_Tier": catalog.PRICE_TIERS[k % len(catalog.PRICE_TIERS)]}
        set_inputs(book, src / f"preset{k}.xlsx", picks)
        cases[f"preset{k}"] = {"picks": picks}

    for name in cases:
        assert cache.inject(src / f"{name}.xlsx", CANARY) == len(CANARY)  # the stale-cache canary
        cases[name]["input"] = src / f"{name}.xlsx"
    return [src / f"{n}.xlsx" for n in cases], {"cases": cases, "pristine": pristine, "layout": base}


@functools.cache
def recalculated() -> dict:
    """The test files recalculated by LibreOffice (the session's one run); cached for the session."""
    paths, made = lo_batch.results("workbook")
    for name, path in zip(made["cases"], paths):
        made["cases"][name]["output"] = path
    return made


@pytest.fixture(scope="module")
def lo():
    return recalculated()


@functools.cache
def recalculated_values(path: Path) -> openpyxl.Workbook:
    """The values LibreOffice saved in one of its output files (openpyxl, data_only), loaded once: tests only read
    them, and several read each file."""
    return openpyxl.load_workbook(path, data_only=True)


def _close(got, want) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        # LibreOffice saves a TRUE/FALSE formatted as words ("TRUE";"TRUE";"FALSE") as 1/0
        return got is want or (type(got) is int and isinstance(want, bool) and got == int(want))
    if isinstance(want, str):  # text results (the layout check's message)
        return got == want
    return isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize("case", ["seed002", "cli_2048", *(f"gen{k}" for k in range(N_GENERATED)), "gpu_switch",
                                  "recipe_megatron", "recipe_override", "hostile",
                                  *(f"tier_{t}" for t in TIER_PICKS), "tier_typed"])
def test_every_named_output_equals_the_engine(lo, case):
    c = lo["cases"][case]
    wb = recalculated_values(c["output"])
    results = evaluate(c["scenario"])
    for out in OUTPUTS:
        got = named_cell(wb, out.name).value
        assert _close(got, results[out.name]), f"{case}: {out.name} LibreOffice {got!r} engine {results[out.name]!r}"


def test_stale_cache_canary_was_recalculated(lo):
    for name, c in lo["cases"].items():
        # the input's two canary cells only: read lazily (read_only), not the whole workbook parsed into memory
        before = openpyxl.load_workbook(c["input"], data_only=True, read_only=True)
        after = recalculated_values(c["output"])
        stale = {(sheet, at): before[sheet][at].value for sheet, at in CANARY}
        before.close()
        for (sheet, at), wrong in CANARY.items():
            assert stale[sheet, at] == wrong
            assert after[sheet][at].value != wrong, f"{name}: {sheet}!{at} kept its stale cached value"
        if "scenario" in c:  # (preset cases are checked against the catalog below)
            assert _close(after["Time"]["B6"].value, evaluate(c["scenario"])["Train_Days"])


def test_seed002_recalculated_shows_the_seed_numbers(lo):
    """Seed 002 §7.3: 8.4e23 FLOPs and 76.08 days on 1024 A800 at MFU 0.4."""
    wb = recalculated_values(lo["cases"]["seed002"]["output"])
    assert named_cell(wb, "Train_FLOPs").value == pytest.approx(8.4e23, rel=1e-12)
    assert round(named_cell(wb, "Train_Days").value, 2) == 76.08


@pytest.mark.parametrize("case", ["seed002", "cli_2048"])
def test_cached_values_equal_libreoffice_everywhere(lo, case):
    """Every formula cell's cached value (engine) equals LibreOffice's recalculation of the same cell: in the seed's
    workbook as built, and in one `xlcalc workbook` wrote from another scenario (a spreadsheet that does not
    recalculate on load shows the cached values)."""
    formulas = openpyxl.load_workbook(lo["cases"][case]["pristine"])
    cached = openpyxl.load_workbook(lo["cases"][case]["pristine"], data_only=True)
    recalc = recalculated_values(lo["cases"][case]["output"])
    if case == "cli_2048":  # the cached days are those of 2,048 GPUs: half the seed's 76.08 (6ND / (peak N MFU))
        days = 6 * 70e9 * 2e12 / (312e12 * 2048 * 0.4) / 86400
        assert named_cell(cached, "Train_Days").value == pytest.approx(days, rel=1e-12)
    checked, wrong = 0, []
    for ws in formulas.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if cell.data_type != "f":
                    continue
                mine = cached[ws.title][cell.coordinate].value
                theirs = recalc[ws.title][cell.coordinate].value
                checked += 1
                same = mine == theirs if isinstance(mine, (bool, str)) else _close(theirs, mine)
                if not same:
                    wrong.append(f"{ws.title}!{cell.coordinate}: cached {mine!r}, LibreOffice {theirs!r}")
    assert checked > 500
    assert not wrong, wrong[:10]


def test_generated_workbooks_have_no_spreadsheet_errors(lo):
    for k in range(N_GENERATED):
        wb = recalculated_values(lo["cases"][f"gen{k}"]["output"])
        errors = [f"{ws.title}!{c.coordinate}={c.value}" for ws in wb.worksheets for row in ws.iter_rows()
                  for c in row if isinstance(c.value, str) and c.value.startswith("#") and c.value.endswith(("!", "?", "A"))]
        assert not errors, errors[:10]


def test_gpu_dropdown_switch_flows_through(lo):
    wb = recalculated_values(lo["cases"]["gpu_switch"]["output"])
    assert named_cell(wb, "Peak_TFLOPS").value == 320     # seed 002: Ascend 910B, 320 TFLOPS
    assert named_cell(wb, "GPU_Memory_GB").value == 64    # seed 002: Ascend 910B, 64 GB


def test_hostile_text_survives_recalculation_as_text(lo):
    wb = openpyxl.load_workbook(lo["cases"]["hostile"]["output"])
    cell = named_cell(wb, "Scenario_Name")
    assert cell.data_type == "s" and cell.value == HOSTILE_NAME
    assert named_cell(wb, "Scenario_Notes").value == "@SUM(1)+2"


def _seed002_static_gb(bytes_weights, bytes_grads, bytes_optimizer):
    """Seed 002's layout (70B, ZeRO-1, TP 4 x PP 4 on 1024 GPUs: DP = 64) with the given byte recipe.

    The first pipeline stage holds 20 of the 80 layers ((70e9 - 2 x 32000 x 8192) / 80 parameters each) and the
    32000 x 8192 input embedding."""
    vh = 32000 * 8192 / 1e9
    stage_b = 20 * (70 - 2 * vh) / 80 + vh
    return xlcalc.mem_static_gb(params_b=stage_b, zero_stage=1, dp=1024 // 16, tp=4, pp=1, bytes_weights=bytes_weights,
                                bytes_grads=bytes_grads, bytes_optimizer=bytes_optimizer)


def test_recipe_dropdown_switch_flows_through(lo):
    """Picking "megatron" in Recipe_Id: LibreOffice looks up 2 + 4 + 12 bytes and Mem_Static_GB follows."""
    r = RECIPES["megatron"]
    wb = recalculated_values(lo["cases"]["recipe_megatron"]["output"])
    assert [named_cell(wb, n).value for n in ("Bytes_Weights", "Bytes_Grads", "Bytes_Optimizer")] == \
        [r.weights, r.grads, r.optimizer] == [2, 4, 12]
    want = _seed002_static_gb(r.weights, r.grads, r.optimizer)
    assert math.isclose(named_cell(wb, "Mem_Static_GB").value, want, rel_tol=1e-9)
    seed = recalculated_values(lo["cases"]["seed002"]["output"])
    assert math.isclose(named_cell(seed, "Mem_Static_GB").value, _seed002_static_gb(2, 4, 8), rel_tol=1e-9)


def test_typed_byte_count_wins_over_the_recipe(lo):
    r = RECIPES["megatron"]
    wb = recalculated_values(lo["cases"]["recipe_override"]["output"])
    assert named_cell(wb, "Bytes_Grads").value == 3
    assert named_cell(wb, "Bytes_Optimizer").value == r.optimizer
    want = _seed002_static_gb(r.weights, 3, r.optimizer)
    assert math.isclose(named_cell(wb, "Mem_Static_GB").value, want, rel_tol=1e-9)


# --- presets and dropdowns: numbers or a readable message, never an error value ------------------------

ERROR_VALUES = ("#DIV/0!", "#VALUE!", "#N/A", "#NAME?", "#REF!", "#NUM!", "#NULL!", "Err:")
KEY_LABELS = {"GPUs in the plan": "N_GPUs", "Training days on those GPUs": "Train_Days",
              "Total cost incl. training tax (USD)": "Total_Cost_USD"}


def start_key_results(wb) -> dict[str, object]:
    """Label -> value of the Key results block on the Start sheet."""
    ws = wb["Start"]
    return {ws[f"B{r}"].value: ws[f"C{r}"].value for r in range(1, ws.max_row + 1)
            if ws[f"B{r}"].value and ws[f"C{r}"].value is not None}


def _preset_cases(lo):
    return {n: c for n, c in lo["cases"].items() if n.startswith("preset")}


def test_every_model_preset_and_gpu_was_tried(lo):
    picks = [c["picks"] for c in _preset_cases(lo).values()]
    assert {p["GPU_Type"] for p in picks} == {g.id for g in catalog.gpus()}
    assert {p["Model_Preset"] for p in picks} == {m.id for m in catalog.models()}
    assert {p["Price_Tier"] for p in picks} == set(catalog.PRICE_TIERS)
    priced = [p for p in picks if _price_gap(p) is None]
    assert priced and len(priced) < len(picks)  # both: a sourced rate, and a tier the GPU has no rate for


def test_key_results_are_numbers_or_a_readable_message_for_every_preset(lo):
    for name, c in _preset_cases(lo).items():
        wb = recalculated_values(c["output"])
        results = start_key_results(wb)
        gpu = catalog.get_gpu(c["picks"]["GPU_Type"])
        # a model whose layers the plan's PP does not divide (126, 70, 61 layers on PP 4) gets uneven stages: the
        # first and the last stage hold fewer layers (Llama 3 405B: 31, 32, 32, 31), every stage whole layers
        layers, first, last = (named_cell(wb, n).value for n in ("Layers", "First_Stage_Layers", "Last_Stage_Layers"))
        assert named_cell(wb, "Layout_Check").value == "OK", name
        if layers % 4:
            assert first >= 1 and last >= 1 and (layers - first - last) % 2 == 0, (name, first, last)
        for label in (*KEY_LABELS, "GPUs to provision for the deadline", "Memory per GPU (GB)", "Fits in one GPU?",
                      "Compute: GPU-hours x price (USD)", "Budget left (negative = over)"):
            v = results[label]
            assert v is not None, (name, label)
            if isinstance(v, str):
                assert not v.startswith(ERROR_VALUES), (name, label, v)
                assert gpu.id in v and "type it in" in v, (name, label, v)  # says which GPU, what to type where
            else:
                assert isinstance(v, (int, float)) and math.isfinite(v), (name, label, v)
        missing = _first_missing(gpu)
        price_gap = _price_gap(c["picks"])
        if missing:  # the catalog lacks a figure: the check names it and the cell to type it in
            assert results["Input check"] == _message(gpu, *missing[0]), name
        elif price_gap:  # no rate at the picked tier: the check names the GPU, the tier and where to type a price
            assert results["Input check"] == price_gap, name
        else:
            assert results["Input check"] == "OK: every key result is computed", name
        if price_gap:
            assert results["Price assumed per GPU-hour (USD)"] == price_gap, name
        else:
            assert results["Price assumed per GPU-hour (USD)"] == catalog.rental_price(gpu.id, c["picks"]["Price_Tier"]
                                                                                     ).usd_per_gpu_hour, name
        # each result waits for the figures it needs (days: the peak; the deadline plan: also GPUs per node;
        # the fit: the GPU memory; the dollars: also the price) and shows the number or the first one's message
        for label, needs in (("Training days on those GPUs", {"Peak_TFLOPS"}),
                             ("Total cost incl. training tax (USD)", {"Peak_TFLOPS", "USD_per_GPU_Hour"}),
                             ("Compute: GPU-hours x price (USD)", {"Peak_TFLOPS", "USD_per_GPU_Hour"}),
                             ("GPUs to provision for the deadline", {"Peak_TFLOPS", "GPUs_per_Node"}),
                             ("Fits in one GPU?", {"GPU_Memory_GB"})):
            gaps = [_message(gpu, *m) for m in missing if m[1] in needs]
            if price_gap and "USD_per_GPU_Hour" in needs:
                gaps.append(price_gap)
            if gaps:
                assert results[label] == gaps[0], (name, label)
            else:
                assert isinstance(results[label], (int, float)), (name, label, results[label])
        if price_gap:  # every cell priced on the other sheets shows the way to the price's message, not #VALUE!
            for result in ("Compute_Cost_USD", "Total_Cost_USD", "Budget_Left_USD", "Rent_Cost_USD"):
                assert named_cell(wb, result).value == "see Start!C3", (name, result)
        allowed = chart_data_cells(wb)  # #N/A there: no point on the chart (tests/chart_data.py)
        for ws in wb.worksheets:  # no error value on any sheet
            errors = [f"{ws.title}!{x.coordinate}={x.value}" for row in ws.iter_rows() for x in row
                      if isinstance(x.value, str) and x.value.startswith(ERROR_VALUES)
                      and f"{ws.title}!{x.coordinate}" not in allowed]
            assert not errors, (name, errors[:5])


def _first_missing(gpu):
    """The figures the GPU catalog does not publish, in the order the Start sheet checks them."""
    return [(what, cell) for value, what, cell in ((gpu.half_tflops, "dense 16-bit peak TFLOPS", "Peak_TFLOPS"),
                                                   (gpu.memory_gb, "memory (GB)", "GPU_Memory_GB"),
                                                   (gpu.gpus_per_node, "GPUs per node", "GPUs_per_Node"))
            if value is None]


def _price_gap(picks):
    """The message the price cell shows when the catalog has no rate for the picked GPU and tier, else None."""
    gpu, tier = catalog.get_gpu(picks["GPU_Type"]).id, picks["Price_Tier"]
    if any(p.gpu == gpu and p.tier == tier and p.usd_per_gpu_hour is not None for p in catalog.prices()):
        return None
    return f"{gpu}: no published {tier} price on the Prices sheet \u2014 type it in USD_per_GPU_Hour"


def _message(gpu, what, cell):
    return f"{gpu.id}: no published {what} on the GPUs sheet \u2014 type it in {cell}"


def test_model_preset_sets_the_catalog_architecture(lo):
    """Picking a model in Model_Preset replaces the typed 70B architecture with the catalog's."""
    for name, c in _preset_cases(lo).items():
        wb = recalculated_values(c["output"])
        m = catalog.get_model(c["picks"]["Model_Preset"])
        assert named_cell(wb, "Params_B").value == pytest.approx(m.derived_params() / 1e9, abs=5e-4), name
        assert [named_cell(wb, n).value for n in ("Layers", "Hidden", "Heads", "Seq_Len")] == \
            [m.layers, m.hidden, m.heads, m.seq_len], name
        days = start_key_results(wb)["Training days on those GPUs"]
        g = catalog.get_gpu(c["picks"]["GPU_Type"])
        if g.half_tflops is not None:  # 6 N D / (peak x GPUs x MFU), seed 002's 2T tokens, 1024 GPUs, MFU 0.4
            n = round(m.active_params_b if m.experts else m.params_b, 3)  # an MoE: N = its active parameters
            assert named_cell(wb, "Active_Params_B").value == pytest.approx(n if m.experts else 0, abs=5e-4), name
            want = 6 * n * 1e9 * 2e12 / (g.half_tflops * 1e12 * 1024 * 0.4) / 86400
            assert days == pytest.approx(want, rel=1e-9), name


def test_plan_title_follows_the_picked_presets(lo):
    for name, c in _preset_cases(lo).items():
        wb = recalculated_values(c["output"])
        g = catalog.get_gpu(c["picks"]["GPU_Type"])
        m = catalog.get_model(c["picks"]["Model_Preset"])
        title = wb["Start"]["C2"].value
        assert title.startswith(f"{m.name}, "), (name, title)  # the model picked, by its catalog name
        assert f"on 1024 x {g.name} at MFU 40%" in title, (name, title)
        assert "A800" not in title or g.id == "a800", (name, title)


# --- print: soffice --convert-to pdf straight from the .xlsx -----------------------------------------------

def _pdftotext():
    require(shutil.which("pdftotext"), "pdftotext (poppler-utils) is not installed")


@functools.cache
def printed() -> dict:
    """PDFs as a user prints them, in two soffice runs: the seed 002 workbook saved as .ods, then one run printing
    seed002.xlsx (an A800: no purchase price), gap.xlsx (a GPU with a figure left unpublished, on Inputs and in the
    last Scenarios column), priced.xlsx (a GPU with a purchase price), pp3.xlsx (PP 3 on its 80 layers: a layout
    that does not split into whole stages), par.xlsx (such layouts typed into two Parallelism rows: PAR_ROWS),
    inputs.xlsx (FAILING_INPUTS: a value pasted past its check and a framework look-up with no row), pasted.xlsx
    (PASTED_VALUES: the issue's pasted values and a GPU typed wrong) and that .ods (as seed002-ods)."""
    require_libreoffice()
    from xlcalc.workbook.libreoffice import convert, to_pdf

    work = Path(tempfile.mkdtemp(prefix="xlcalc-pdf-"))
    atexit.register(shutil.rmtree, work, True)
    src = work / "in"
    src.mkdir()
    build(src / "seed002.xlsx", [load_scenario(SEED002)])
    book = Edits(src / "seed002.xlsx")
    set_inputs(book, src / "gap.xlsx", {"GPU_Type": _gap_gpu().id, _scenario_gpu_cell(book.wb): _gap_gpu().id})
    set_inputs(book, src / "priced.xlsx", {"GPU_Type": _priced_gpu()})
    set_inputs(book, src / "pp3.xlsx", {"PP_Size": 3})
    set_inputs(book, src / "inputs.xlsx", FAILING_INPUTS)
    set_inputs(book, src / "pasted.xlsx", PASTED_VALUES)
    set_inputs(book, src / "par.xlsx", {f"Parallelism!{col}{r}": v for r, (tp, pp, _, _) in PAR_ROWS.items()
                                        for col, v in (("A", tp), ("B", pp))})
    ods, = convert([src / "seed002.xlsx"], work / "ods", "ods", ".ods")
    ods = ods.rename(src / "seed002-ods.ods")
    pdfs = to_pdf([src / "seed002.xlsx", src / "gap.xlsx", src / "priced.xlsx", src / "pp3.xlsx", src / "par.xlsx",
                   src / "inputs.xlsx", src / "pasted.xlsx", ods], work / "out")
    return {p.stem: p for p in pdfs} | {f"{p.stem}.xlsx": src / f"{p.stem}.xlsx" for p in pdfs}


def _pdf_text(path: Path, first: int | None = None, last: int | None = None) -> str:
    import subprocess

    args = ["pdftotext", "-layout"] + (["-f", str(first), "-l", str(last)] if first else []) + [str(path), "-"]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def test_pdf_export_straight_from_the_xlsx_has_the_key_results_on_page_one():
    _pdftotext()
    pdf = printed()["seed002"]
    assert pdf.stat().st_size > 10_000
    page1 = _pdf_text(pdf, 1, 1)
    hours = 8.4e23 / (312e12 * 0.4) / 3600          # seed 002 §7.3: 70B x 2T on A800 at MFU 0.4
    lines = {line.split("  ")[0].strip(): line.split()[-1] for line in page1.splitlines() if "  " in line.strip()}
    assert lines["GPUs in the plan"] == "1,024"
    assert lines["Training days on those GPUs"] == "76.08"
    # failures priced from goodput at Young's interval on 1024 GPUs (per-GPU MTBF 50,677 h from Llama 3's
    # 419 interruptions in 54 days on 16,384 GPUs; 60 s saves, 600 s restarts: the scenario's defaults)
    m, save, restart = 50_677 / 1024, 60 / 3600, 600 / 3600
    tau = math.sqrt(2 * save * m)
    goodput = 1 - save / tau - (tau / 2 + restart) / m
    assert lines["Total cost incl. training tax (USD)"] == f"${hours * 2.0 / goodput:,.0f}"
    assert "Start" in page1 and "page 1 of" in page1
    assert "Input check OK: every key result is computed" in " ".join(page1.split())  # the master check, page 1
    whole = _pdf_text(pdf)
    pages = whole.count("\f")
    # every sheet fits to one page wide: no 66-page print-out (16 sheets; rows tall enough for their messages)
    assert 8 <= pages <= 40, pages
    for error in ERROR_VALUES:
        assert error not in whole, error
    for n, page in enumerate(whole.split("\f"), start=1):
        assert "###" not in page, (n, [line for line in page.splitlines() if "###" in line][:3])  # a column too narrow
    # page 1 names every sheet; the pages follow that order (the footer names each page's sheet)
    contents = " ".join(page1.split()).split("Sheets, in print order: ", 1)[1].split(".", 1)[0].split(", ")
    assert len(set(contents)) == len(contents) == 16, contents
    footers = [re.findall(r"(\w+) \u2014 page \d+ of", page) for page in whole.split("\f") if page.strip()]
    order = [f[-1] for f in footers]
    assert [s for i, s in enumerate(order) if i == 0 or order[i - 1] != s] == contents
    # the Checks sheet prints every check: the Inputs' (A:C) and the other sheets' input cells and layouts (E:G)
    checks = " ".join(page for page, f in zip(whole.split("\f"), order) if f == "Checks")
    for line in (r"Params_B Inputs!B\d+ OK", r"Parallelism!A5 TP_Size OK", r"Parallelism![A-Z]+5 Layout_Check OK"):
        assert re.search(line, " ".join(checks.split())), line
    # a section heading prints once, where it stands: not repeated as the title row of each page after it
    budget = [page for page, f in zip(whole.split("\f"), order) if f == "Budget"]
    assert len(budget) >= 2 and sum("Failures and checkpoints" in page for page in budget) == 1


def test_pdf_via_ods_prints_money_as_money():
    """The .xlsx saved as .ods, then printed: the Start sheet's cost cells keep their dollar format."""
    _pdftotext()
    pdf = printed()["seed002-ods"]
    page1 = _pdf_text(pdf, 1, 1)
    lines = {line.split("  ")[0].strip(): line.split()[-1] for line in page1.splitlines() if "  " in line.strip()}
    for label in ("Total cost incl. training tax (USD)", "Compute: GPU-hours x price (USD)",
                  "Budget left (negative = over)"):
        assert re.fullmatch(r"-?\$[0-9]{1,3}(,[0-9]{3})*", lines[label]), (label, lines[label])
    hours = 8.4e23 / (312e12 * 0.4) / 3600          # seed 002 §7.3, at its $2 per GPU-hour
    assert lines["Compute: GPU-hours x price (USD)"] == f"${hours * 2.0:,.0f}"


def _gap_gpu():
    """A catalog GPU with a figure the Start sheet needs left unpublished (the first such row)."""
    return next(g for g in catalog.gpus() if _first_missing(g))


def _scenario_gpu_cell(wb) -> str:
    """The GPU type cell of the last Scenarios column (``Scenarios!E8``)."""
    ws = wb["Scenarios"]
    row = next(r for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value == "GPU type")
    col = max(c.column_letter for c in ws[4] if c.value)
    return f"Scenarios!{col}{row}"


def test_pdf_of_a_gpu_without_a_published_figure_shows_the_message():
    _pdftotext()
    gpu = _gap_gpu()
    page1 = " ".join(_pdf_text(printed()["gap"], 1, 1).split())
    assert _message(gpu, *_first_missing(gpu)[0]) in page1
    for error in ERROR_VALUES:
        assert error not in page1, error


def _priced_gpu() -> str:
    """A catalog GPU with a purchase price (the first)."""
    return next(g.id for g in catalog.gpus() if catalog.purchase_price(g.id) is not None)


# one line of 11-point text, in points (Excel's default row is 15 points); one character per unit of column width
# (a unit is the width of a digit: running text averages narrower, so this over-counts the lines)
LINE_PT = 13


def _lines_needed(text: str, width: float) -> int:
    return math.ceil(len(text) / width)


def _cell_width(ws, at: str) -> float:
    """The width (in column-width units) a cell's text has: its merged range's columns, or its own column."""
    from openpyxl.utils import get_column_letter
    from openpyxl.utils.cell import range_boundaries

    c1 = c2 = ws[at].column
    for rng in ws.merged_cells.ranges:
        if ws[at].coordinate in rng:
            c1, _, c2, _ = range_boundaries(str(rng))
    return sum(ws.column_dimensions[get_column_letter(c)].width or 13 for c in range(c1, c2 + 1))


def _budget_row(ws, starts: str) -> int:
    return next(r for r in range(1, ws.max_row + 1) if str(ws[f"A{r}"].value or "").startswith(starts))


def _messages(stem: str) -> list[tuple[str, str, str]]:
    """(sheet, cell, text) of the messages the printed workbook ``stem`` shows, from the catalog's own sentences:
    the purchase price used on Budget and the own column of its table over time (no purchase price), and Start's
    key results (a figure the catalog leaves unpublished)."""
    wb = openpyxl.load_workbook(printed()[f"{stem}.xlsx"])
    budget = wb["Budget"]
    heading = _budget_row(budget, "Own vs rent (")
    over_time = _budget_row(budget, "Own vs rent over time") + 2
    months = [r for r in range(over_time, budget.max_row + 1) if isinstance(budget[f"A{r}"].value, int)]
    months = months[:next((i for i, (a, b) in enumerate(zip(months, months[1:])) if b != a + 1), len(months))]
    if stem == "priced":
        buy = catalog.purchase_price(_priced_gpu())
        return [("Budget", f"D{heading}", "Purchase price used: " + catalog.capex_note(buy))]
    if stem == "seed002":
        sentence = str(catalog.missing_capex("a800"))
        labels = {OUTPUT_BY_NAME[n].label for n in OWNING}
        owning = [r for r in range(heading + 1, over_time) if budget[f"A{r}"].value in labels]
        assert len(owning) == len(OWNING)
        first = _budget_row(budget, "Budget-first: ")  # its own column: every row priced at the owned GPU-hour
        bought = [r for r in range(first + 1, budget.max_row + 1) if budget[f"A{r}"].value in BOUGHT]
        assert len(bought) == len(BOUGHT)
        return [("Budget", f"D{heading}", "Purchase price used: " + sentence)] + \
            [("Budget", f"B{r}", sentence) for r in owning] + [("Budget", f"C{r}", sentence) for r in bought] + \
            [("Budget", f"C{r}", sentence) for r in months]
    gpu = _gap_gpu()
    text = _message(gpu, *_first_missing(gpu)[0])
    start = wb["Start"]
    rows = [r for r in range(1, start.max_row + 1) if start[f"B{r}"].value in dict(KEY_RESULTS).values()]
    # the last Scenarios column, on that GPU: its figure's cell and every result over it show the sentence
    scenarios = wb["Scenarios"]
    col = _scenario_gpu_cell(wb).split("!")[1].rstrip("0123456789")
    figure = INPUT_BY_NAME[_first_missing(gpu)[0][1]].label
    over = {o.label for o in OUTPUTS if _first_missing(gpu)[0][1] in dependencies(o.name)}
    results = next(r for r in range(1, scenarios.max_row + 1) if scenarios[f"A{r}"].value == OUTPUTS[0].label)
    shown = [r for r in range(1, results) if scenarios[f"A{r}"].value == figure] + \
        [r for r in range(results, scenarios.max_row + 1) if scenarios[f"A{r}"].value in over]
    assert len(shown) == 1 + len(over) >= 2, (figure, over, shown)
    return [("Start", f"C{r}", text) for r in rows] + [("Scenarios", f"{col}{r}", text) for r in shown]


# the budget-first rows (their labels): what the budget buys, rented and owned
BOUGHT = ("Price of a busy GPU-hour (USD)", "GPUs the budget pays for over the deadline", "GPU-hours the budget buys",
          "Model FLOPs the budget buys", "Largest compute-optimal model (20 tokens/parameter), billions",
          "Its training tokens, trillions")
# the named own vs rent results on Budget that need a purchase price: with none (the A800), each shows its sentence
OWNING = ("Own_Cost_USD", "Own_USD_per_GPU_Hour", "Breakeven_Utilisation", "Breakeven_Months", "Capex_per_GPU_All_In",
          "Hardware_Capex_USD")


@pytest.mark.parametrize("stem", ["seed002", "priced", "gap"])
def test_pdf_prints_every_message_whole_in_rows_tall_enough(stem):
    """A long message (a missing purchase price's sentence on Budget, a figure's on Start and in a Scenarios column
    on a GPU without it) prints whole: wrapped in its cell (merged across the free columns), its row tall enough for
    its lines, so it neither runs off the page nor prints over the row below. A message in a column with text beside it (Budget's own vs rent results and the own
    column of budget-first: their unit or formula to the right) is read down its column of the printed page
    (_printed_in_column)."""
    _pdftotext()
    pdf = printed()[stem]
    page_text = _pdf_text(pdf)
    text = " ".join(page_text.split())
    wb = openpyxl.load_workbook(printed()[f"{stem}.xlsx"])
    messages = _messages(stem)
    assert messages
    for sheet, at, message in messages:
        ws = wb[sheet]
        beside = ws.cell(ws[at].row, ws[at].column + 1).value
        if (sheet == "Budget" and beside is not None) or sheet == "Scenarios":  # read down its printed column
            label = ws[f"A{ws[at].row}"].value
            assert _printed_in_column(page_text, label, message, None if beside is None else str(beside)), \
                (stem, sheet, at, label, message)
        else:
            assert " ".join(message.split()) in text, (stem, sheet, at, message)
        cell = ws[at]
        assert cell.alignment.wrap_text and cell.alignment.vertical == "top", (sheet, at)
        need = _lines_needed(message, _cell_width(ws, at)) * LINE_PT
        assert (ws.row_dimensions[cell.row].height or 0) >= need, (sheet, at, ws.row_dimensions[cell.row].height, need)
    if stem == "gap":  # the Scenarios column's cells: its figure's and every result's over it
        assert len([m for m in messages if m[0] == "Scenarios"]) >= 5
    if stem == "seed002":  # the table's own column: the sentence once per month, whole
        months = messages[-11:]
        assert len(months) == 11 and text.count(" ".join(months[-1][2].split())) >= len(months)
        assert len(messages) == 1 + len(OWNING) + len(BOUGHT) + len(months)


# PP 3 on seed 002's 80 layers: the layout check's message, in the words of xlcalc.layout (as
# tests/test_workbook_checks.py writes it): 26.67 layers a stage
PP3_WHY = (f"pp = 3 is not allowed: pp must be a divisor of layers = 80 (every pipeline stage holds whole layers: "
           f"layers/PP = {round(80 / 3, 2)}; or give an uneven split: layers_per_stage, or first_stage_layers and "
           f"last_stage_layers)")


# Layouts typed into Parallelism rows of seed 002 (80 layers, 1,024 GPUs, CP 1): row -> (TP, PP, the cell the check
# blames, the message in the words of xlcalc.layout as the Checks sheet prints it: without the arithmetic in brackets,
# or only up to "is not allowed" where that line would pass 90 characters (row 8's: 105)
PAR_ROWS = {6: (1, 3, "Parallelism!B6 (PP_Size)", "pp = 3 is not allowed: pp must be a divisor of layers = 80"),
            8: (4, 5, "Parallelism!N8 (Layout_Check)", "n_gpus = 1024 is not allowed")}


def _read_down(lines: list[str], i: int, c: int, length: int) -> str:
    """The text of the cell whose first printed line is ``lines[i]`` from character ``c``: its lines read down that
    column, each up to the gap before the next column's text, without white space, until a blank or ``length``."""
    got = ""
    for below in lines[i:]:
        segment = below[c:].split("  ", 1)[0]
        if not segment.strip():
            break
        got += "".join(segment.split())
        if len(got) >= length:
            break
    return got


def test_pdf_of_a_layout_that_does_not_divide_prints_its_message_whole_and_points_to_it():
    """PP 3 on the seed's 80 layers, printed: the layout check's message prints whole on the Memory sheet's pages
    (its row wrapped across B:D, tall enough), every memory cell of the Memory and FineTuning sheets prints the way
    to it ("see Memory!B4", the cell of Layout_Check) and no number, and nowhere does the message print clipped: each
    cell that starts it (the Memory sheet's, each Scenarios column's layout check, the Checks sheet's, Start's)
    prints it to its end."""
    _pdftotext()
    pdf = printed()["pp3"]
    wb = openpyxl.load_workbook(printed()["pp3.xlsx"])
    (sheet, at), = wb.defined_names["Layout_Check"].destinations
    pointer = f"see {sheet}!{at.replace('$', '')}"
    assert pointer == "see Memory!B4"
    whole = _pdf_text(pdf)
    pages = whole.split("\f")
    order = [(re.findall(r"(\w+) \u2014 page \d+ of", page) or [""])[-1] for page in pages]
    by_sheet: dict[str, list[str]] = {}
    for page, name in zip(pages, order):
        by_sheet.setdefault(name, []).append(page)
    flat = {name: " ".join(" ".join(ps).split()) for name, ps in by_sheet.items()}
    why = " ".join(PP3_WHY.split())
    assert flat["Memory"].count(why) == 1, flat["Memory"][:2000]  # whole, once: the layout check's row
    assert "Layout check (OK = every piece whole) " + why in flat["Memory"]
    assert flat["Start"].count(why) >= 3  # the input check (after the cell it blames) and two key results
    for label in ("Layers on the stage", "Weights", "Total per GPU"):  # the part cells: both stages point to B4
        line = next(line for line in " ".join(by_sheet["Memory"]).splitlines() if line.startswith(label + " "))
        assert line.split()[len(label.split()):][:4] == pointer.split() * 2, (label, line)
    for label in (OUTPUT_BY_NAME[n].label for n in ("Mem_Total_GB", "Fits_GPU", "Max_Micro_Batch", "DP_Size")):
        line = next(line for line in " ".join(by_sheet["Memory"]).splitlines() if line.startswith(label[:40]))
        assert pointer in line, (label, line)
    fine = "\n".join(by_sheet["FineTuning"])
    for label in ("Weights, first stage (frozen base + adapters)", "Memory per GPU, heavier stage", "Fits the GPU?"):
        line = next(line for line in fine.splitlines() if line.startswith(label))
        assert line[len(label):].split()[:2] == pointer.split(), (label, line)
    # no clipped message: every cell that starts the message prints all of it, read down its column
    start, target = "pp = 3 is not allow", "".join(PP3_WHY.split())
    cells = 0
    for name, ps in by_sheet.items():
        lines = "\n".join(ps).splitlines()
        for i, line in enumerate(lines):
            c = line.find(start)
            while c >= 0:
                cells += 1
                if name in ("Start", "Checks") and line.find("(PP_Size): ") == c - len("(PP_Size): "):
                    text = " ".join(" ".join(lines[i:i + 4]).split())  # after the cell it blames, wrapped under it
                    assert why in text, (name, line)
                else:
                    assert _read_down(lines, i, c, len(target)).startswith(target), (name, line)
                c = line.find(start, c + 1)
    assert cells >= 1 + 3 + 1 + 3  # Memory's, Start's (check and two key results), Checks', three Scenarios columns
    for error in ERROR_VALUES:
        assert error not in whole, error
    for n, page in enumerate(pages, start=1):
        assert "###" not in page, (n, [line for line in page.splitlines() if "###" in line][:3])


def _print_whole(by_sheet: dict[str, list[str]], sentences: dict[str, str]) -> dict[str, int]:
    """On every sheet's printed pages, each message that starts printing (a key of ``sentences``: the start of the
    message that is its value) prints to its end: in the lines under it, or read down its column (``_read_down``).
    A start that begins a longer one found first in the line (the message after the cell it blames) is read there.
    Returns how many messages start on each sheet."""
    starts: dict[str, int] = {}
    for name, ps in by_sheet.items():
        lines = "\n".join(ps).splitlines()
        for i, line in enumerate(lines):
            seen: set[int] = set()
            for start, sentence in sentences.items():
                c = line.find(start)
                while c >= 0:
                    if not any(0 < c - at <= CELL_CHARS for at in seen):
                        seen.add(c)
                        starts[name] = starts.get(name, 0) + 1
                        text = " ".join(" ".join(lines[i:i + 4]).split())  # the cell's wrapped lines under it
                        tail = sentence[sentence.find(start):]
                        assert tail in text or _read_down(lines, i, c, len("".join(tail.split()))).startswith(
                            "".join(tail.split())), (name, line)
                    c = line.find(start, c + 1)
    return starts


CELL_CHARS = len("Scenarios!C100: ")  # the cell a message blames, before its sentence


# Inputs the memory reads, failing: a micro-batch of 0 pasted past its validation (its check refuses it), and
# torchtitan at fp32, a pair the Frameworks sheet does not list (torchtitan offers amp only: the framework inputs of
# the memory hold the look-up's message, "torchtitan at fp32: not on the Frameworks sheet ...")
FAILING_INPUTS = {"Micro_Batch": 0, "Framework": "torchtitan", "Precision": "fp32"}


def test_pdf_of_failing_inputs_prints_pointers_in_the_memory_cells_and_the_message_whole():
    """FAILING_INPUTS, printed: every memory cell of the Memory and FineTuning sheets prints the way to Start's input
    check, "see Start!C3", and no number; Start's input check prints the first failing input's message whole
    (Precision's: the preset choices are checked before the other inputs), and its memory and fit results that
    message; on every sheet every message that starts printing prints to its end (on Memory the layout check's row,
    which shows Micro_Batch's), and the narrow cells of every sheet print the way to it: "see Start!C3" (the
    framework inputs' cells on Inputs and Scenarios too), or in a Scenarios column "Inputs!B29 refused: see Checks"
    (the cell its message blames: the Checks sheet prints that cell's line whole, a long value in it cut to its start
    and "..."); no page more than the untouched plan."""
    from xlcalc.frameworks import FRAMEWORKS

    _pdftotext()
    pdf = printed()["inputs"]
    wb = openpyxl.load_workbook(printed()["inputs.xlsx"])
    whole = _pdf_text(pdf)
    pages = whole.split("\f")
    assert len(pages) == len(_pdf_text(printed()["seed002"]).split("\f"))  # no page more
    assert 8 <= whole.count("\f") <= 40
    order = [(re.findall(r"(\w+) \u2014 page \d+ of", page) or [""])[-1] for page in pages]
    by_sheet: dict[str, list[str]] = {}
    for page, name in zip(pages, order):
        by_sheet.setdefault(name, []).append(page)
    flat = {name: " ".join(" ".join(ps).split()) for name, ps in by_sheet.items()}
    assert wb["Start"]["B3"].value == "Input check"
    pointer = "see Start!C3"

    def where(name: str) -> str:
        (sheet, at), = wb.defined_names[name].destinations
        return f"{sheet}!{at.replace('$', '')}"

    precision = (f"{where('Precision')}: Precision = fp32 is not allowed: Precision must be a precision the "
                 f"Frameworks sheet gives for framework torchtitan: {', '.join(FRAMEWORKS['torchtitan'])}, or empty")
    micro = (f"{where('Micro_Batch')}: Micro_Batch = 0 is not allowed: Micro_Batch must be a whole number >= 1 and "
             "<= 1,000,000")
    assert "Input check " + precision in flat["Start"], flat["Start"][:1500]
    for label in ("Memory per GPU (GB)", "Fits in one GPU?"):  # Start's memory results: the message, not the way
        assert f"{label} {precision}" in flat["Start"], label
    assert pointer not in flat["Start"]
    memory = "\n".join(by_sheet["Memory"]).splitlines()
    for label in ("Layers on the stage", "Weights", "Logits and loss buffers", "Recompute working set",
                  "Total per GPU"):  # the part cells: both stages point to Start!C3
        line = next(line for line in memory if line.startswith(label + " "))
        assert line.split()[len(label.split()):][:4] == pointer.split() * 2, (label, line)
    for name in ("DP_Size", "Mem_Total_GB", "Fit_Verdict", "Fits_GPU", "Max_Micro_Batch", "Inflight_First"):
        label = OUTPUT_BY_NAME[name].label
        line = next(line for line in memory if line.startswith(label[:40]))
        assert pointer in line and not re.search(r"\d", line.split(pointer, 1)[1].split("  ")[0]), (name, line)
    fine = "\n".join(by_sheet["FineTuning"]).splitlines()
    for label in ("Weights, first stage (frozen base + adapters)", "Memory per GPU, heavier stage", "Fits the GPU?"):
        line = next(line for line in fine if line.startswith(label))
        assert line[len(label):].split()[:2] == pointer.split(), (label, line)
    assert "Layout check (OK = every piece whole) " + micro in flat["Memory"]  # its row: the input's check, whole
    # on the Memory sheet and Start, every message that starts printing prints to its end
    sentences = {"Micro_Batch = 0 is not allow": micro, "Precision = fp32 is not allow": precision,
                 "torchtitan at fp32: not on the": "torchtitan at fp32: not on the Frameworks sheet \u2014 pick a "
                                                    "Framework and one of the precisions it offers there"}
    # each message also starts with the cell it blames ("Inputs!B29: Mi..."): a cell clipped short of the message
    starts = _print_whole(by_sheet, {where("Micro_Batch") + ": Mi": micro, where("Precision") + ": Pr": precision,
                                     **sentences})
    # Start's input check and its memory and fit results; Memory's layout check row; the Checks sheet's lines; each
    # Scenarios column's layout check (the column's input check's message)
    assert starts["Start"] >= 3 and starts["Memory"] >= 1 and starts["Checks"] >= 2 + 3 and starts["Scenarios"] >= 3
    # the narrow cells print the way to the whole message: Start's input check, or in a Scenarios column the cell its
    # message blames and the Checks sheet, where that cell's line prints whole
    for name in ("Inputs", "Time", "Budget", "FineTuning", "Sensitivity", "Parallelism", "Scenarios"):
        assert pointer in flat[name], name
    assert flat["Inputs"].count(pointer) == 4  # the framework inputs: their look-up's message names no cell
    assert flat["Scenarios"].count(f"{where('Micro_Batch')} refused: see Checks") >= 3 * 5  # in each column
    for checked in ("Grads_Freed", "Logits_Buffer_Bytes"):  # a long value in a check's line: its start and "..."
        assert re.search(rf"Scenarios!C\d+: {checked} = torchtitan at fp32: n\.\.\. is not allowed: {checked} must be",
                         flat["Checks"]), checked
    for error in ERROR_VALUES:
        assert error not in whole, error
    for n, page in enumerate(pages, start=1):
        assert "###" not in page, (n, [line for line in page.splitlines() if "###" in line][:3])


# The issue's pasted values (MFU 40, utilisation 1.5, a budget of -5) and a GPU typed wrong (its figures' look-ups hold
# "not on the GPUs sheet")
PASTED_VALUES = {"GPU_Type": "h100 sxm", "MFU": 40, "Utilisation": 1.5, "Budget_USD": -5}


def test_pdf_of_pasted_values_prints_every_message_whole_and_the_way_to_it():
    """PASTED_VALUES, printed: Start's input check prints the first failing input's message whole (GPU_Type's), and
    on every sheet every message that starts printing prints to its end; the narrow cells (Inputs' looked-up GPU
    figures, Time, Budget's lines, ranges, own vs rent and budget-first) print "see Start!C3" instead; no error value,
    no ###, no page more than the untouched plan."""
    _pdftotext()
    pdf = printed()["pasted"]
    wb = openpyxl.load_workbook(printed()["pasted.xlsx"])
    whole = _pdf_text(pdf)
    pages = whole.split("\f")
    assert len(pages) == len(_pdf_text(printed()["seed002"]).split("\f"))
    order = [(re.findall(r"(\w+) \u2014 page \d+ of", page) or [""])[-1] for page in pages]
    by_sheet: dict[str, list[str]] = {}
    for page, name in zip(pages, order):
        by_sheet.setdefault(name, []).append(page)
    flat = {name: " ".join(" ".join(ps).split()) for name, ps in by_sheet.items()}

    def where(name: str) -> str:
        (sheet, at), = wb.defined_names[name].destinations
        return f"{sheet}!{at.replace('$', '')}"

    looked_up = "h100 sxm: not on the GPUs sheet \u2014 pick an id from the list"
    allowed = {"MFU": "a number > 0 and <= 1", "Utilisation": "a number >= 0.01 and <= 1",
               "Budget_USD": "a number > 0 and <= 1e+13"}  # as tests/test_workbook_checks.py's PASTED
    sentences = {f"{where(n)}: {n} = {PASTED_VALUES[n]} is not allowed: {n} must be {a}" for n, a in allowed.items()}
    gpu = (f"{where('GPU_Type')}: GPU_Type = h100 sxm is not allowed: GPU_Type must be an id from the list on the GPUs "
           "sheet, or empty")
    assert "Input check " + gpu in flat["Start"], flat["Start"][:1500]
    by_start = {m[:20]: m for m in (*sentences, gpu)} | {m[m.index(": ") + 2:][:20]: m[m.index(": ") + 2:]
                                                         for m in (*sentences, gpu)} | {looked_up[:24]: looked_up}
    starts = _print_whole(by_sheet, by_start)
    assert starts["Start"] >= 1 + 5 and starts["Checks"] >= 5, starts  # the key results wait for the peak's message
    pointer = "see Start!C3"
    for name in ("Inputs", "Time", "Budget"):
        assert pointer in flat[name], name
    assert flat["Inputs"].count(pointer) >= 3  # the GPU's figures: peak, memory, GPUs per node
    for error in ERROR_VALUES:
        assert error not in whole, error
    for n, page in enumerate(pages, start=1):
        assert "###" not in page, (n, [line for line in page.splitlines() if "###" in line][:3])


def test_pdf_of_parallelism_rows_that_do_not_divide_prints_short_whole_messages_and_pointers():
    """Two Parallelism rows whose layouts do not divide (PAR_ROWS), printed: each row's layout check cell prints its
    reason short and whole ("pp = 3 refused"; "refused: see Checks" where the input and its value are longer), the
    row's results print the way to it ("see column N") and no number; the Checks sheet prints each row's line whole
    in one line (the cell it blames, then the message without the arithmetic in brackets, which it never starts);
    Start's input check prints the first row's whole message. Every message that starts printing prints to its end,
    and the printed pages are as many as the untouched plan's."""
    _pdftotext()
    pdf = printed()["par"]
    whole = _pdf_text(pdf)
    pages = whole.split("\f")
    assert len(pages) == len(_pdf_text(printed()["seed002"]).split("\f"))  # no page more
    order = [(re.findall(r"(\w+) \u2014 page \d+ of", page) or [""])[-1] for page in pages]
    by_sheet: dict[str, list[str]] = {}
    for page, name in zip(pages, order):
        by_sheet.setdefault(name, []).append(page)
    flat = {name: " ".join(" ".join(ps).split()) for name, ps in by_sheet.items()}
    par = flat["Parallelism"]
    assert par.count("pp = 3 refused") == 1 and par.count("refused: see Checks") == 1, par[:3000]
    assert "is not allowed" not in par  # no message starts in the table's narrow cells
    # each row's results point to its layout check cell: DP, model states, activations, total, fits, micro-batch,
    # the stages' totals, layers, parameters, activation bytes, in flight (15 a row)
    assert par.count("see column N") == 15 * len(PAR_ROWS), par.count("see column N")
    checks = flat["Checks"]
    for r, (_, _, where, why) in PAR_ROWS.items():
        assert f"{where}: {why}" in checks, (r, checks[:3000])
        assert f"{where}: {why} (" not in checks and f"{where}: {why}:" not in checks  # nothing more is started
    assert "every pipeline stage holds whole" not in checks and "data parallelism needs whole" not in checks
    pp3 = PAR_ROWS[6]
    assert f"{pp3[2]}: {PP3_WHY}" in flat["Start"]  # the master check: the first failing row's message whole
    # every message that starts printing prints to its end (the whole message, or the Checks line without brackets)
    starts = 0
    for name, ps in by_sheet.items():
        lines = "\n".join(ps).splitlines()
        for i, line in enumerate(lines):
            for start in ("pp = 3 is not allow", "n_gpus = 1024 is not allow"):
                c = line.find(start)
                if c < 0:
                    continue
                starts += 1
                text = " ".join(" ".join(lines[i:i + 4]).split())  # the cell's wrapped lines under it
                if " ".join(PP3_WHY.split()) in text:
                    continue
                why = PAR_ROWS[6 if start.startswith("pp") else 8][3]  # else the Checks line: whole, no brackets
                tail = text[text.find(start):]
                assert tail.startswith(why), (name, line)
                assert not tail[len(why):].startswith((" (", ":")), (name, line)
    assert starts >= 2 + 1  # the two Checks lines and Start's input check
    for error in ERROR_VALUES:
        assert error not in whole, error
    for n, page in enumerate(pages, start=1):
        assert "###" not in page, (n, [line for line in page.splitlines() if "###" in line][:3])


def _printed_in_column(layout_text: str, label: str, message: str, beside: str | None) -> bool:
    """Whether ``message`` prints whole in the cell beside its row's ``label``, as pdftotext -layout lays the page
    out: the cell's wrapped lines read down the column where its first line starts, each line up to the gap before
    the next column's text, or up to where the text ``beside`` it starts on the first line (None: the page's last
    column, Scenarios' last); compared without white space, as a line may break inside a word or at a hyphen. The row is found by the label's first 24 characters
    (a long label wraps in its cell)."""
    target = "".join(message.split())
    first, head = message.split()[0], beside.split()[0] if beside else None
    lines = layout_text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith(label[:24]) or (c := line.find(first, 24)) < 0:
            continue
        d = line.find(head, c + len(first)) if head else -1
        got = ""
        for below in lines[i:]:
            segment = below[c:]
            if d > 0:  # up to the first space from one character before the text beside (the layout's grid rounds)
                cut = segment.find(" ", d - c - 1)
                segment = segment[:cut] if cut >= 0 else segment
            segment = segment.split("  ", 1)[0]
            if not segment.strip():
                break
            got += "".join(segment.split())
            if len(got) >= len(target):
                break
        if got.startswith(target):
            return True
    return False


# --- price tiers: the same dollars and the same price statement as the engine and the CLI ------------------------

def _price_row(wb):
    ws = wb["Start"]
    return next(r for r in range(1, ws.max_row + 1) if ws[f"B{r}"].value == "Price assumed per GPU-hour (USD)")


@pytest.mark.parametrize("tier", list(TIER_PICKS))
def test_a_picked_tier_prices_the_plan_and_states_price_and_tier_as_the_cli(lo, tier, capsys):
    from xlcalc.cli import main
    from xlcalc.scenario import price_note

    c = lo["cases"][f"tier_{tier}"]
    wb = recalculated_values(c["output"])
    row = catalog.rental_price(TIER_PICKS[tier], tier)
    assert named_cell(wb, "USD_per_GPU_Hour").value == row.usd_per_gpu_hour
    r = _price_row(wb)
    shown, cli = wb["Start"][f"D{r}"].value, price_note(c["scenario"])
    # "$<rate>/GPU-hour, <tier> tier, price catalog <id> (<date>)": the same words after the rate
    assert shown.split("/GPU-hour, ", 1)[1] == cli.split("/GPU-hour, ", 1)[1] == \
        f"{tier} tier, price catalog {row.id} ({row.date})"
    assert float(shown.split("/", 1)[0].lstrip("$")) == row.usd_per_gpu_hour
    assert wb["Budget"]["D3"].value.startswith(shown)
    # the CLI's estimate of the same plan at the same tier: the same dollars
    sc = c["scenario"]
    # (no --capex-usd-per-gpu: both take the GPU's purchase price from the price catalog, or both say it has none)
    assert main(["estimate", "--gpu", sc.gpu, "--price-tier", tier, "--recipe", "seed002", "--overhead-gb", "4",
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c.field: data["scenario"][c.field] for c in INPUTS} == {c.field: getattr(sc, c.field) for c in INPUTS}
    assert data["price"] == cli
    for name in ("Compute_Cost_USD", "Total_Cost_USD", "Rent_Cost_USD", "Own_Cost_USD", "Budget_Left_USD"):
        assert _close(named_cell(wb, name).value, data["results"][name]), name


def _budget_capex_note(wb) -> str:
    """Column D of Budget's own-vs-rent heading: the purchase price the sheet used, in words."""
    ws = wb["Budget"]
    row = next(r for r in range(1, ws.max_row + 1) if str(ws[f"A{r}"].value or "").startswith("Own vs rent ("))
    return ws[f"D{row}"].value


def test_capex_is_looked_up_from_the_gpu_or_says_it_has_none(lo):
    import tomllib
    rows = tomllib.loads((ROOT / "xlcalc" / "data" / "prices.toml").read_text())
    capex = {}
    for r in next(iter(rows.values())):  # the first purchase price of each GPU in the catalog file
        if "capex_usd_per_gpu" in r:
            capex.setdefault(r["gpu"], r["capex_usd_per_gpu"])
    seen = set()
    for tier, gpu in TIER_PICKS.items():
        wb = recalculated_values(lo["cases"][f"tier_{tier}"]["output"])
        got = named_cell(wb, "Capex_USD_per_GPU").value
        said = _budget_capex_note(wb)  # Budget states the purchase price it used, in the CLI's words
        if gpu in capex:
            assert got == capex[gpu], (tier, gpu)
            assert isinstance(named_cell(wb, "Own_Cost_USD").value, float)
            buy = catalog.purchase_price(gpu)
            assert said == f"Purchase price used: ${capex[gpu]:,.0f} per GPU, price catalog {buy.id} ({buy.date or 'undated'})"
            assert said == "Purchase price used: " + catalog.capex_note(buy)
        else:  # a readable message naming the input, the GPU and what to do (the CLI's sentence), never #N/A
            assert got == str(catalog.missing_capex(gpu)) == named_cell(wb, "Own_Cost_USD").value
            assert "Capex_USD_per_GPU" in got and gpu in got
            assert said == "Purchase price used: " + got
        seen.add(gpu in capex)
    assert seen == {True, False}


def test_the_own_vs_rent_chart_data_draw_no_point_for_a_message(lo):
    """LibreOffice's values of the chart-data columns: the table's number, or #N/A (no point) where the table shows
    a message (a GPU without a purchase price: the own line), never the $0 a chart draws for text."""
    from xlcalc.workbook.sheets import CHART_DATA_COLS

    _, rent_col, own_col = CHART_DATA_COLS
    seen = set()
    for tier in TIER_PICKS:
        wb = recalculated_values(lo["cases"][f"tier_{tier}"]["output"])
        ws = wb["Budget"]
        for r in chart_data_rows(wb):
            for table, data in (("B", rent_col), ("C", own_col)):
                shown, drawn = ws[f"{table}{r}"].value, ws[f"{data}{r}"].value
                if isinstance(shown, str):
                    assert drawn == "#N/A", (tier, r, table, shown, drawn)
                else:
                    assert isinstance(shown, (int, float)) and drawn == shown, (tier, r, table, shown, drawn)
                seen.add(isinstance(shown, str))
    assert seen == {True, False}  # both: a GPU with a purchase price, and one without


def test_a_price_typed_over_the_tier_wins_and_the_sheet_says_so(lo):
    wb = recalculated_values(lo["cases"]["tier_typed"]["output"])
    assert named_cell(wb, "USD_per_GPU_Hour").value == 3.1
    assert wb["Start"][f"D{_price_row(wb)}"].value == "$3.1/GPU-hour, typed over the spot price"
    assert named_cell(wb, "Compute_Cost_USD").value == pytest.approx(named_cell(wb, "GPU_Hours").value * 3.1, rel=1e-12)
