"""Price tiers in the planning workbook: the Price_Tier dropdown looks the price up on the Prices sheet."""

from __future__ import annotations

import pytest

from seed002_workbook import TEMPLATES, named
from xlcalc import errors as x_errors
from xlcalc.scenario import load_scenario


def _pick(lay, **picks):
    """Type values into the named input cells of a laid-out book (as a user picks them) and recalculate."""
    for name, value in picks.items():
        sheet, at = lay.book.names[name]
        lay.book.sheets[sheet][at].value = value
    lay.book._memo.clear()  # cells are evaluated afresh when read
    return lay.book


def test_prices_sheet_holds_every_catalog_rate_with_date_and_source(formulas_wb):
    from xlcalc import catalog
    ws = formulas_wb["Prices"]
    rows = {ws[f"A{r}"].value: r for r in range(4, ws.max_row + 1) if ws[f"A{r}"].value}
    rates = [p for p in catalog.prices() if p.usd_per_gpu_hour is not None]
    assert len(rates) >= 10
    for p in rates:
        r = rows[f"{p.gpu}|{p.tier}"]
        assert (ws[f"B{r}"].value, ws[f"C{r}"].value, ws[f"D{r}"].value, ws[f"F{r}"].value) == \
            (p.gpu, p.tier, p.usd_per_gpu_hour, p.id)
        assert ws[f"E{r}"].value == p.date and "published.json" in ws[f"G{r}"].value
    dv = [d for d in formulas_wb["Inputs"].data_validations.dataValidation
          if str(named(formulas_wb, "Price_Tier").coordinate) in str(d.sqref)]
    assert len(dv) == 1 and dv[0].type == "list" and dv[0].formula1.startswith("Prices!")
    listed = [ws[f"A{r}"].value for r in range(int(dv[0].formula1.rsplit("$", 1)[1]) - len(catalog.PRICE_TIERS) + 1,
                                               int(dv[0].formula1.rsplit("$", 1)[1]) + 1)]
    assert listed == list(catalog.PRICE_TIERS)


def test_every_gpu_and_tier_gives_the_catalog_rate_or_a_message_naming_both():
    """Each GPU of the dropdown at each tier: the catalog's rate (and costs in dollars), or a sentence naming the
    GPU and the tier in the price cell, the cost results and the input check (engine evaluation of the cells)."""
    from xlcalc import catalog
    from xlcalc.workbook import layout
    lay = layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")])
    start = {lay.book.sheets["Start"][f"B{r}"].value: f"C{r}" for r in range(1, 30)
             if isinstance(lay.book.sheets["Start"].get(f"B{r}") and lay.book.sheets["Start"][f"B{r}"].value, str)}
    tried = priced = 0
    for g in catalog.gpus():
        for tier in catalog.PRICE_TIERS:
            book = _pick(lay, GPU_Type=g.id, Price_Tier=tier)
            usd = book.value_of("USD_per_GPU_Hour")
            cost = book.value("Start", start["Total cost incl. training tax (USD)"])
            try:
                rate = catalog.rental_price(g.id, tier).usd_per_gpu_hour
            except x_errors.InputError:
                rate = None
            tried += 1
            if rate is not None:
                priced += 1
                assert usd == rate, (g.id, tier)
                if g.half_tflops is not None:
                    assert isinstance(cost, float) and cost > 0, (g.id, tier, cost)
                    compute = book.value("Start", start["Compute: GPU-hours x price (USD)"])
                    assert compute == pytest.approx(book.value_of("GPU_Hours") * rate, rel=1e-12)
                note = book.value("Start", "D" + start["Price assumed per GPU-hour (USD)"][1:])
                assert note.startswith(f"${rate:g}/GPU-hour, {tier} tier, price catalog ")
            else:
                msg = f"{g.id}: no published {tier} price on the Prices sheet \u2014 type it in USD_per_GPU_Hour"
                assert usd == msg, (g.id, tier, usd)
                assert book.value("Start", start["Compute: GPU-hours x price (USD)"]) == msg
                if g.half_tflops is not None and g.memory_gb and g.gpus_per_node:
                    assert cost == msg and book.value("Start", "C3") == msg
                    assert isinstance(book.value("Start", start["Training days on those GPUs"]), float)
    assert tried == len(catalog.gpus()) * len(catalog.PRICE_TIERS) and 10 <= priced < tried


def test_typed_price_wins_over_the_tier_and_says_so():
    from xlcalc.workbook import layout
    lay = layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")])
    book = _pick(lay, GPU_Type="h100-sxm", Price_Tier="spot", USD_per_GPU_Hour=3.1)
    assert book.value("Budget", "D3").startswith("$3.1/GPU-hour, typed over the spot price")
    assert book.value_of("Compute_Cost_USD") == pytest.approx(book.value_of("GPU_Hours") * 3.1, rel=1e-12)
    lay = layout([load_scenario(TEMPLATES / "seed002-70b-a800.toml")])
    book = _pick(lay, GPU_Type="", Price_Tier="spot")
    assert str(book.value_of("USD_per_GPU_Hour")).startswith("Price_Tier needs a GPU_Type")
