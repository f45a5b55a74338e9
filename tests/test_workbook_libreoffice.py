"""Proof in a real spreadsheet engine: LibreOffice recalculates the workbook to the engine's numbers.

One ``soffice`` call converts every test file (2-core machines): the seed 002 workbook as built,
workbooks whose inputs were changed through the defined names, one whose GPU type was switched
in the dropdown cell, two whose precision recipe was switched (one with a byte count typed over
its look-up), and one built from a hostile scenario. Each input file carries a stale-cache
canary (a deliberately wrong cached value) that must come back correct.
Skips where LibreOffice is absent, except under CI=true, where it fails.
"""

from __future__ import annotations

import functools
import json
import math
import random
import shutil
from pathlib import Path

import openpyxl
import pytest

import lo_batch
import xlcalc
from chart_data import chart_data_cells, chart_data_rows
from cli_run import SEED002_LAYOUT_FLAGS
from named_edits import Edits
from xlcalc import catalog
from xlcalc.cli import main as xlcalc_main
from xlcalc.outputs import OUTPUTS
from xlcalc.recipes import RECIPES
from xlcalc.scenario import INPUTS, STEP_GROUP, Scenario, evaluate, load_scenario
from xlcalc.workbook import build, cache
from xlcalc.workbook.compare import gpu_variant

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
    # (no --capex-usd-per-gpu: both take the GPU's purchase price from the price catalog, or both say it has none;
    # seed 002's layout given as its preset gives it)
    assert main(["estimate", "--gpu", sc.gpu, "--price-tier", tier, "--recipe", "seed002", "--overhead-gb", "4",
                 *SEED002_LAYOUT_FLAGS, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    same = [c.field for c in INPUTS if c.group != STEP_GROUP]  # estimate computes no step time: no stack, no batch
    assert {f: data["scenario"][f] for f in same} == {f: getattr(sc, f) for f in same}
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
    from xlcalc.workbook.budget_sheet import CHART_DATA_COLS

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
