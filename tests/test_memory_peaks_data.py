"""Data integrity of the published peak-memory records (xlcalc/data/reference/memory_peaks.json).

A shape test, not a prediction test: every record carries its source, URL and a verbatim quote
that contains the measured figure; ids are unique; units are known; layouts multiply out to the
GPU count; models named by a catalog id have the catalog's architecture. The expected values
here are the schema's rules and the catalog (xlcalc/data/models.toml), not the records themselves.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import REFERENCE
from xlcalc.catalog import get_gpu, get_model

PEAKS = REFERENCE / "memory_peaks.json"
NOTES = REFERENCE / "memory_peaks.md"

TOP_FIELDS = {
    "id": str, "source": str, "source_id": str, "publisher": str, "url": str, "source_kind": str, "quote": str,
    "model": dict, "gpu": str, "n_gpus": int, "layout": dict, "seq_len": int, "recompute": str,
    "precision": dict, "measured": dict, "confidence": str, "job": str, "notes": str,
}
NULLABLE = {"gpu_catalog_id": str, "gpu_memory": dict, "micro_batch": int, "global_batch": int,
            "compile": bool, "extra_settings": dict, "inferred": dict, "derived": dict}
MODEL_FIELDS = ("name", "catalog_id", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
                "gated_ffn", "params_b", "moe")
LAYOUT_FIELDS = ("tp", "pp", "cp", "ep", "dp_shard", "dp_replicate", "sharding", "pp_schedule",
                 "virtual_stages", "layers_per_stage", "optimizer_offload")

SOURCE_KINDS = {"framework benchmark doc", "paper", "blog", "model card"}
UNITS = {"GB": 1e9, "GiB": 2**30}
WHAT = re.compile(r"^(peak active|peak reserved|max allocated|nvidia-smi|not stated)\b")
SHARDING = {"fsdp_full_shard", "fsdp_grad_op", "hsdp", "zero0", "zero1", "zero2", "zero3", "none"}
SCHEDULES = {None, "1F1B", "interleaved_1F1B"}
RECOMPUTE = {"none", "selective_op", "selective_layer", "megatron_selective", "full"}
JOBS = {"pretrain", "full_finetune", "lora", "qlora"}
CONFIDENCE = {"exact", "approx"}


@pytest.fixture(scope="module")
def records() -> list[dict]:
    data = json.loads(PEAKS.read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def test_enough_records_from_enough_sources(records):
    # Issue 10: >= 20 records from >= 2 sources; the collection aims at >= 30 from >= 3 publishers.
    assert len(records) >= 30
    assert len({r["publisher"] for r in records}) >= 3
    assert len({r["source_id"] for r in records}) >= 3
    assert len({r["url"] for r in records}) >= 3
    pretrain = [r for r in records if r["job"] == "pretrain"]
    assert len(pretrain) >= 20, "the memory model is scored on pre-training runs first"


def test_ids_unique_and_readable(records):
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    for i in ids:
        assert re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", i), i
    for r in records:
        assert re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", r["source_id"]), r["id"]


def test_one_source_id_per_document(records):
    # Leave-one-source-out groups by source_id: a document belongs to exactly one group.
    by_url: dict[str, set] = {}
    for r in records:
        by_url.setdefault(r["url"], set()).add(r["source_id"])
    assert all(len(ids) == 1 for ids in by_url.values()), by_url


def test_required_fields_and_types(records):
    for r in records:
        for name, typ in TOP_FIELDS.items():
            assert name in r, (r["id"], name)
            assert isinstance(r[name], typ) and not (typ is int and isinstance(r[name], bool)), (r["id"], name)
            if typ is str:
                assert r[name].strip(), (r["id"], name)
        for name, typ in NULLABLE.items():
            assert name in r, (r["id"], name)
            assert r[name] is None or isinstance(r[name], typ), (r["id"], name)
        assert r["url"].startswith("https://"), r["id"]
        assert r["source_kind"] in SOURCE_KINDS, r["id"]
        assert r["confidence"] in CONFIDENCE, r["id"]
        assert r["job"] in JOBS, r["id"]
        assert r["recompute"] in RECOMPUTE, r["id"]
        assert r["seq_len"] > 0 and (r["micro_batch"] is None or r["micro_batch"] > 0), r["id"]
        assert {"params", "matmul", "optimizer"} <= set(r["precision"]), r["id"]


def test_quote_holds_the_measured_figure_as_printed(records):
    for r in records:
        m = r["measured"]
        assert set(m) >= {"value", "unit", "what"}, r["id"]
        assert isinstance(m["value"], (int, float)) and m["value"] > 0, r["id"]
        assert m["unit"] in UNITS, r["id"]
        assert WHAT.match(m["what"]), (r["id"], m["what"])
        printed = {f"{m['value']}", f"{m['value']:.1f}", f"{m['value']:.2f}"}
        assert any(p in r["quote"] for p in printed), (r["id"], m["value"])
        assert len(r["quote"]) >= 20, r["id"]


def test_gpu_capacity_known_units_and_never_below_the_peak(records):
    for r in records:
        cap = r["gpu_memory"]
        if r["gpu_catalog_id"]:
            get_gpu(r["gpu_catalog_id"])  # names a catalog row
        if cap is None:
            continue
        assert cap["unit"] in UNITS and cap["value"] > 0, r["id"]
        peak_bytes = r["measured"]["value"] * UNITS[r["measured"]["unit"]]
        # A measured peak cannot exceed the GPU's memory. 2% slack for GB/GiB labels that the
        # sources themselves mix (see derived.unit_as_logged).
        assert peak_bytes <= cap["value"] * UNITS[cap["unit"]] * 1.02, r["id"]


def test_unit_as_logged_differs_only_in_label(records):
    for r in records:
        d = r["derived"] or {}
        if "unit_as_logged" in d:
            assert d["unit_as_logged"] in UNITS and d["unit_as_logged"] != r["measured"]["unit"], r["id"]
            assert d["measured_gib"] == r["measured"]["value"], r["id"]


def test_layout_multiplies_out_to_the_gpu_count(records):
    for r in records:
        lay = r["layout"]
        for name in LAYOUT_FIELDS:
            assert name in lay, (r["id"], name)
        for name in ("tp", "pp", "cp", "ep", "dp_shard", "dp_replicate"):
            assert isinstance(lay[name], int) and lay[name] >= 1, (r["id"], name)
        assert lay["tp"] * lay["pp"] * lay["cp"] * lay["dp_shard"] * lay["dp_replicate"] == r["n_gpus"], r["id"]
        # Expert parallelism borrows from the data-parallel (x CP) ranks, as in torchtitan and Megatron.
        assert (lay["dp_shard"] * lay["dp_replicate"] * lay["cp"]) % lay["ep"] == 0, r["id"]
        assert lay["sharding"] in SHARDING, r["id"]
        assert lay["pp_schedule"] in SCHEDULES, r["id"]
        assert (lay["pp"] > 1) == (lay["pp_schedule"] is not None), r["id"]
        if lay["layers_per_stage"] is not None:
            assert sum(lay["layers_per_stage"]) == r["model"]["layers"], r["id"]
        m = r["model"]
        assert m["heads"] % lay["tp"] == 0 and m["kv_heads"] % lay["tp"] == 0, r["id"]
        stages = lay["pp"] * (lay["virtual_stages"] or 1)
        assert m["layers"] >= stages, r["id"]
        if m["moe"]:
            assert m["moe"]["experts"] % lay["ep"] == 0, r["id"]


def test_model_fields_and_catalog_agreement(records):
    for r in records:
        m = r["model"]
        for name in MODEL_FIELDS:
            assert name in m, (r["id"], name)
        assert m["heads"] % m["kv_heads"] == 0 and m["hidden"] % m["heads"] == 0, r["id"]
        if m["moe"]:
            assert {"experts", "experts_active", "moe_ffn_hidden", "shared_experts"} <= set(m["moe"]), r["id"]
            assert 1 <= m["moe"]["experts_active"] <= m["moe"]["experts"], r["id"]
        else:
            assert m["ffn_hidden"] > 0, r["id"]
        if m["catalog_id"]:
            cat = get_model(m["catalog_id"])
            got = (m["layers"], m["hidden"], m["heads"], m["kv_heads"], m["ffn_hidden"], m["vocab"], m["gated_ffn"])
            want = (cat.layers, cat.hidden, cat.heads, cat.kv, cat.ffn_hidden, cat.vocab, cat.gated_ffn)
            assert got == want, (r["id"], got, want)
            # params_b agrees with the catalog's own parameter count of the same architecture.
            assert m["params_b"] == pytest.approx(cat.derived_params() / 1e9, rel=1e-3), r["id"]


def test_inferred_settings_name_real_fields(records):
    # A setting filled from a published config rather than the source's text says so, by field.
    for r in records:
        for key, why in (r["inferred"] or {}).items():
            head = key.split(".")[0]
            assert head in r, (r["id"], key)
            assert isinstance(why, str) and len(why) > 10, (r["id"], key)


def test_every_source_has_a_paragraph_in_the_notes(records):
    text = NOTES.read_text(encoding="utf-8")
    for url in {r["url"] for r in records}:
        assert url in text, url


def test_record_counts_in_the_notes_match_the_data(records):
    # Each source paragraph of memory_peaks.md says "(N records; <url> [and <url>])".
    text = NOTES.read_text(encoding="utf-8")
    stated = re.findall(r"\((\d+) records?;\s*(https://\S+?)(?:\s+and\s+(https://\S+?))?\)\.", text)
    assert stated, "no '(N records; url)' in memory_peaks.md"
    covered = set()
    for count, *urls in stated:
        urls = {u for u in urls if u}
        covered |= urls
        assert sum(r["url"] in urls for r in records) == int(count), (count, urls)
    assert covered == {r["url"] for r in records}


def _document(url: str) -> str:
    """A GitHub blob URL without its commit: owner/repo/path."""
    m = re.match(r"https://github\.com/([^/]+/[^/]+)/blob/[0-9a-f]{7,40}/(.+)", url)
    return f"{m.group(1)}/{m.group(2)}" if m else url


def test_source_ids_agree_with_the_throughput_runs(records):
    runs = json.loads((REFERENCE / "throughput_runs.json").read_text(encoding="utf-8"))
    theirs = {_document(r["url"]): r["source_id"] for r in runs}
    shared = [r for r in records if _document(r["url"]) in theirs]
    assert shared, "the torchtitan benchmark documents are in both files"
    for r in shared:
        assert r["source_id"] == theirs[_document(r["url"])], r["id"]
