"""The catalogs: every row valid and sourced, values as published, lookups, clear errors."""

from __future__ import annotations

import re

import pytest

from conftest import published_records
from xlcalc import catalog
from xlcalc.catalog import GPU_FIELDS, MODEL_FIELDS, capex_note, get_gpu, get_model, price_for, purchase_price
from xlcalc.errors import CatalogError

GIB = 2**30

REQUIRED_GPUS = ["V100", "A100 40GB", "A100 80GB", "A800", "H100 SXM", "H100 PCIe", "H800", "H200", "B200",
                 "MI300X", "Ascend 910B", "TPU v4", "TPU v5e", "TPU v5p", "TPU v6e", "H100 NVL", "GB200", "MI325X"]
REQUIRED_MODELS = ["gpt3-175b", "llama2-7b", "llama2-13b", "llama2-70b", "llama3.1-8b", "llama3.1-70b",
                   "llama3.1-405b", "bloom-176b", "opt-175b", "chinchilla-70b", "deepseek-v3"]


def _records() -> dict:
    return published_records()


# --- rows ---------------------------------------------------------------------------------

def test_catalogs_load_and_every_row_has_a_source():
    for rows in (catalog.gpus(), catalog.models(), catalog.prices()):
        assert rows
        for row in rows:
            assert row.source.strip() and len(row.source) > 10, row.id
            assert re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", row.id)


def test_required_rows_present():
    for label in REQUIRED_GPUS:
        get_gpu(label)
    assert {m.id for m in catalog.models()} >= set(REQUIRED_MODELS)


def test_cited_record_ids_exist():
    records = _records()
    for row in (*catalog.gpus(), *catalog.models(), *catalog.prices()):
        cited = re.findall(r"published\.json ([a-z0-9.\-]+)", row.source)
        cited += re.findall(r"\b((?:hw|price)-[a-z0-9.\-]*[a-z0-9])", row.source)
        for rid in cited:
            assert rid.rstrip(".,;") in records, (row.id, rid)
        assert cited or "seed 00" in row.source, row.id


def test_published_pretraining_tokens_name_their_record_and_equal_it():
    """pretrain_tokens_t (the planner's default run length) is the token count of the published.json record its
    pretrain_tokens_source cites; a model without one has no source either (never a guessed count)."""
    records = _records()
    with_tokens = [m for m in catalog.models() if m.pretrain_tokens_t is not None]
    assert {"llama3.1-405b", "deepseek-v3"} <= {m.id for m in with_tokens}
    for m in catalog.models():
        assert (m.pretrain_tokens_t is None) == (m.pretrain_tokens_source is None), m.id
    for m in with_tokens:
        cited = re.findall(r"published\.json ([a-z0-9.\-]*[a-z0-9])", m.pretrain_tokens_source or "")
        assert len(cited) == 1, m.id
        assert m.pretrain_tokens_t * 1e12 == pytest.approx(records[cited[0]]["fields"]["tokens"], rel=1e-9), m.id
    # Dubey et al. 2024 (arXiv 2407.21783): 405B pre-trained on 15.6T tokens; DeepSeek-V3 report: 14.8T tokens
    assert get_model("llama3.1-405b").pretrain_tokens_t == 15.6 and get_model("deepseek-v3").pretrain_tokens_t == 14.8


def test_a_token_count_without_its_source_is_refused():
    row = get_model("llama2-7b").model_dump()
    row.pop("pretrain_tokens_source")
    with pytest.raises(ValueError, match="pretrain_tokens_source"):
        catalog.Model(**row)


# Catalog value -> the published.json hardware record it must equal (written out, not computed).
HARDWARE = {
    "h100-sxm": ("hw-h100-sxm", dict(bf16_tflops=989.4, fp16_tflops=989.4, fp8_tflops=1978.9, memory_gb=80,
                                     hbm_tb_s=3.35, scaleup_gb_s=900 / 2, tdp_w=700)),
    "h100-pcie": ("hw-h100-pcie", dict(bf16_tflops=756.5, fp8_tflops=1513, memory_gb=80, tdp_w=350)),
    "h200": ("hw-h200-sxm", dict(bf16_tflops=989.5, fp8_tflops=1979, memory_gb=141, scaleup_gb_s=900 / 2,
                                 tdp_w=700)),
    "a100-80gb": ("hw-a100", dict(bf16_tflops=312, fp16_tflops=312, memory_gb=80, tdp_w=400)),
    "a100-40gb": ("hw-a100", dict(bf16_tflops=312, fp16_tflops=312, memory_gb=40)),
    "v100": ("hw-v100", dict(fp16_tflops=125)),
    "b200": ("hw-b200", dict(bf16_tflops=2250, fp8_tflops=4500, hbm_tb_s=8, tdp_w=1000)),
    # hw-b200 gb200_variant_1200w: 2500 bf16 / 5000 fp8 dense
    "gb200": ("hw-b200", dict(bf16_tflops=2500, fp8_tflops=5000)),
    # hw-h100-nvl: "14GiB memory extra per chip ... (3.9TBps vs 3.35TBps)"
    "h100-nvl": ("hw-h100-nvl", dict(memory_gb=94, hbm_tb_s=3.9)),
    "mi300x": ("hw-mi300x", dict(bf16_tflops=1307.4, fp16_tflops=1307.4, fp8_tflops=2614.9, memory_gb=192,
                                 hbm_tb_s=5.3, tdp_w=750)),
    "tpu-v4": ("hw-tpu-v4", dict(bf16_tflops=275, hbm_tb_s=1.2)),
    "tpu-v5e": ("hw-tpu-v5e", dict(bf16_tflops=197, memory_gb=16, hbm_tb_s=0.819, scaleup_gb_s=400 / 2)),
    "tpu-v5p": ("hw-tpu-v5p", dict(bf16_tflops=459, memory_gb=95, hbm_tb_s=2.765)),
    "tpu-v6e": ("hw-tpu-v6e", dict(bf16_tflops=918, memory_gb=32, hbm_tb_s=1.638, scaleup_gb_s=800 / 2)),
    "h800": ("hw-h800", dict(scaleup_gb_s=160, scaleout_gb_s=50, gpus_per_node=8)),
    "mi325x": ("hw-mi325x", dict()),
}


@pytest.mark.parametrize("gpu_id", sorted(HARDWARE))
def test_gpu_values_as_published(gpu_id):
    record, expected = HARDWARE[gpu_id]
    gpu = get_gpu(gpu_id)
    assert record in gpu.source
    for field, value in expected.items():
        assert getattr(gpu, field) == pytest.approx(value), (gpu_id, field)


def test_gpu_values_match_the_reference_file():
    r = {k: v["fields"] for k, v in _records().items()}
    assert r["hw-h100-sxm"]["bf16_dense_tflops"] == 989.4 and r["hw-h100-sxm"]["nvlink_gb_s"] == 900
    assert r["hw-h200-sxm"]["bf16_dense_tflops"] == 989.5 and r["hw-h200-sxm"]["tgp_w"] == 700
    assert r["hw-tpu-v5e"]["ici_gb_s_bidir"] == 400 and r["hw-tpu-v6e"]["ici_gb_s_bidir"] == 800
    assert r["hw-tpu-v5e"]["hbm_bandwidth_gb_s"] == 819 and r["hw-tpu-v5p"]["hbm_bandwidth_gb_s"] == 2765
    assert r["hw-tpu-v4"]["memory_gib"] == 32 and r["hw-tpu-v4"]["hbm_bandwidth_gb_s"] == 1200
    assert r["hw-b200"]["bf16_dense_tflops"] == 2250 and r["hw-mi300x"]["tdp_w"] == 750
    assert r["hw-v100"]["fp16_tensor_tflops_sxm"] == 125
    assert r["hw-h800"]["nvlink_effective_gb_s"] == 160 and r["hw-h800"]["infiniband_gb_s"] == 50


def test_tpu_v4_memory_converted_from_gib():
    # hw-tpu-v4 publishes 32 GiB; the catalog is in GB = 1e9 bytes.
    assert get_gpu("tpu-v4").memory_gb == pytest.approx(32 * GIB / 1e9, abs=0.005)
    assert "GiB" in get_gpu("tpu-v4").notes


def test_seed_values():
    # Seed 002 §7.3: A800 80 GB / 312 TFLOPS FP16; Ascend 910B 64 GB / 320 TFLOPS FP16.
    assert (get_gpu("A800").fp16_tflops, get_gpu("A800").memory_gb) == (312, 80)
    assert (get_gpu("910B").fp16_tflops, get_gpu("910B").memory_gb) == (320, 64)
    # Seed 001: V100-32GB.
    assert get_gpu("V100").memory_gb == 32


def test_no_guessed_values():
    h800 = get_gpu("H800")
    assert h800.tdp_w is None                         # no H800 TDP in the sources at hand
    assert h800.matmul_efficiency is None and h800.matmul_efficiency_from == "h100-sxm"  # no H800 MAMF: same die
    assert get_gpu("A800").matmul_efficiency is None and get_gpu("A800").matmul_efficiency_from == "a100-80gb"
    assert get_gpu("910B").bf16_tflops is None        # seed 002 gives FP16 only
    assert get_gpu("V100").bf16_tflops is None        # no BF16 on V100 (hw-v100: FP16 tensor)
    assert get_gpu("tpu-v4").tdp_w is None            # measured power, not a TDP
    assert get_gpu("tpu-v5p").scaleup_gb_s is None    # 4800 Gbps, direction not stated
    for label in ("tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "V100"):
        assert get_gpu(label).gpus_per_node is None, label
        assert get_gpu(label).scaleout_gb_s is None, label


# Issue 11: what plan needs, for every GPU a plan must work out of the box on, from the vendor's reference system
# (datasheet; DGX/HGX networking: one NIC per GPU) -- written out here from the sources in gpus.toml, not computed.
PLANNING = {
    # id: (bf16 TFLOPS, memory GB, HBM TB/s, scale-up GB/s per direction, NIC GB/s per GPU, NVLink domain)
    "a800": (312, 80, 2.039, 400 / 2, 200 / 8, 8),         # A800 datasheet; 200 Gb/s HDR per GPU
    "a100-40gb": (312, 40, 1.555, 600 / 2, 200 / 8, 8),    # A100 datasheet; DGX A100
    "a100-80gb": (312, 80, 2.039, 600 / 2, 200 / 8, 8),
    "h100-sxm": (989.4, 80, 3.35, 900 / 2, 400 / 8, 8),    # DGX H100: 8 x 400 Gb/s ConnectX-7
    "h100-pcie": (756.5, 80, 2.0, 600 / 2, 200 / 8, 2),    # NVLink bridge pairs; 2-8-5-200
    "h100-nvl": (835.5, 94, 3.9, 600 / 2, 200 / 8, 2),
    "h800": (989.4, 80, 3.35, 160, 50, 8),                 # DeepSeek-V3's achievable NVLink / IB
    "h200": (989.5, 141, 4.8, 900 / 2, 400 / 8, 8),
    "b200": (2250, 180, 8, 1800 / 2, 400 / 8, 8),
    "gb200": (2500, 186, 8, 1800 / 2, 400 / 8, 72),        # NVL72: one NVLink domain of 72 GPUs
    "b300": (36000 / 8 / 2, 288, 8, 1800 / 2, 800 / 8, 8),  # HGX B300: 36 PF sparse / 8 GPUs, 288 GB; ConnectX-8
    "gb300": (180000 / 72, 288, 576 / 72, 1800 / 2, 800 / 8, 72),  # GB300 NVL72: rack figures / 72
    "mi300x": (1307.4, 192, 5.3, 896 / 2, 400 / 8, 8),     # 7 x 128 GB/s Infinity Fabric
    "mi325x": (1307.4, 256, 6, 896 / 2, 400 / 8, 8),
}


@pytest.mark.parametrize("gpu_id", sorted(PLANNING))
def test_catalog_complete_for_planning(gpu_id):
    g = get_gpu(gpu_id)
    got = (g.half_tflops, g.memory_gb, g.hbm_tb_s, g.scaleup_gb_s, g.scaleout_gb_s, g.nvlink_domain)
    assert got == pytest.approx(PLANNING[gpu_id]), gpu_id
    assert g.gpus_per_node and (g.matmul_efficiency or g.training_matmul_efficiency or g.matmul_efficiency_from)


def test_peak_tflops():
    assert get_gpu("H100").peak_tflops() == 989.4
    assert get_gpu("H100").peak_tflops("fp8") == 1978.9
    # "half" = BF16 where published, else FP16: the 16-bit peak mixed precision runs at.
    assert get_gpu("A800").peak_tflops() == 312 and get_gpu("A800").half_tflops == 312
    assert get_gpu("910B").peak_tflops() == 320
    assert get_gpu("V100").peak_tflops("fp16") == 125
    with pytest.raises(CatalogError, match="Ascend 910B.*BF16"):
        get_gpu("910B").peak_tflops("bf16")
    with pytest.raises(CatalogError, match="BF16"):
        get_gpu("V100").peak_tflops("bf16")
    with pytest.raises(CatalogError, match="fp4"):
        get_gpu("H100").peak_tflops("fp4")


def test_field_lists():
    for gpu in catalog.gpus():
        assert all(hasattr(gpu, f) for f in GPU_FIELDS)
    for model in catalog.models():
        assert all(hasattr(model, f) for f in MODEL_FIELDS)
    assert {"bf16_tflops", "fp8_tflops", "memory_gb", "hbm_tb_s", "scaleup_gb_s", "tdp_w"} <= set(GPU_FIELDS)
    assert {"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "params_b"} <= set(MODEL_FIELDS)


# --- lookups ------------------------------------------------------------------------------

@pytest.mark.parametrize("label, gpu_id", [
    ("H100", "h100-sxm"), ("h100 sxm", "h100-sxm"), ("H100-SXM", "h100-sxm"), ("h100 pcie", "h100-pcie"),
    ("A100", "a100-80gb"), ("a100-40gb", "a100-40gb"), ("910b", "ascend-910b"), ("ASCEND 910B", "ascend-910b"),
    ("TPU V5E", "tpu-v5e"), ("tpu-v6e", "tpu-v6e"), ("mi300x", "mi300x"), ("NVIDIA H800 SXM 80GB", "h800"),
])
def test_gpu_lookup_is_case_insensitive_with_aliases(label, gpu_id):
    assert get_gpu(label).id == gpu_id


@pytest.mark.parametrize("label, gpu_id", [
    # as people write them, after the maker: these were "unknown GPU"
    ("NVIDIA H100", "h100-sxm"), ("nvidia-h100", "h100-sxm"), ("NVIDIA A100", "a100-80gb"), ("AMD MI300X", "mi300x"),
    ("Huawei Ascend 910B", "ascend-910b"), ("NVIDIA H100 PCIe", "h100-pcie"),
    # as nvidia-smi --query-gpu=name prints them (H100 SXM5, A100 SXM4 80GB and 40GB)
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
])
def test_gpu_lookup_takes_the_makers_name_and_nvidia_smis(label, gpu_id):
    assert get_gpu(label).id == gpu_id
    with pytest.raises(CatalogError):  # the maker alone, or another maker's card, is no GPU of the catalog
        get_gpu(label.split()[0] if " " in label else "nvidia")
    with pytest.raises(CatalogError):
        get_gpu("AMD H100")


@pytest.mark.parametrize("label, model_id", [
    ("GPT3", "gpt3-175b"), ("Llama-2-70B", "llama2-70b"), ("LLAMA3.1-405B", "llama3.1-405b"),
    ("bloom", "bloom-176b"), ("Chinchilla", "chinchilla-70b"), ("DeepSeek-V3", "deepseek-v3"),
])
def test_model_lookup_is_case_insensitive_with_aliases(label, model_id):
    assert get_model(label).id == model_id


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(CatalogError) as err:
        get_gpu("H1000")
    msg = str(err.value)
    assert "'H1000'" in msg and "h100-sxm" in msg and "tpu-v6e" in msg
    with pytest.raises(CatalogError) as err:
        get_model("llama5")
    assert "'llama5'" in str(err.value) and "deepseek-v3" in str(err.value)
    with pytest.raises(CatalogError, match="h100-sxm"):
        price_for("nope")


# --- derived parameter counts ----------------------------------------------------------------

@pytest.mark.parametrize("model_id", REQUIRED_MODELS)
def test_derived_params_within_1pct_of_published(model_id):
    m = get_model(model_id)
    assert abs(m.params_b / m.published_params_b - 1) < 0.01, (m.params_b, m.published_params_b)


def test_llama2_exact_counts():
    # Exact counts of the HF checkpoints (transformers num_parameters()), cited in models.toml.
    assert get_model("llama2-7b").derived_params() == 6_738_415_616
    assert get_model("llama2-13b").derived_params() == 13_015_864_320
    assert get_model("llama2-70b").derived_params() == 68_976_648_192
    # Independent arithmetic for 70B: 2 x 32000 x 8192 embeddings + final norm 8192 + 80 layers of
    # (2 x 8192^2 q/o + 2 x 8192 x 1024 k/v + 3 x 8192 x 28672 SwiGLU + 2 x 8192 norms).
    per_layer = 2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
    assert get_model("llama2-70b").derived_params() == 2 * 32000 * 8192 + 8192 + 80 * per_layer


def test_bloom_matches_published_breakdown():
    # bloom-176b-checkpoint-and-gpu-memory: embedding 3,596,615,680 and 2,466,437,120 per layer;
    # BLOOM paper: 176,247M parameters in total.
    b = get_model("bloom-176b")
    assert b.vocab * b.hidden == 3_596_615_680
    assert b.layer_params(moe=False) == 2_466_437_120
    assert round(b.derived_params() / 1e6) == 176_247


def test_gpt3_close_to_12_h2_l():
    # Kaplan et al. 2020: N ≈ 12 h^2 L non-embedding parameters (173.9B for GPT-3).
    g = get_model("gpt3-175b")
    assert g.nonembed_params_b == pytest.approx(12 * 12288**2 * 96 / 1e9, rel=0.001)


def test_chinchilla_needs_relative_position_projections():
    # Without the per-layer position projection 12 h^2 L + embeddings is 64.7B, 7.6 % short of 70B.
    c = get_model("chinchilla-70b")
    plain = c.model_copy(update={"relative_positions": False})
    assert plain.params_b < 0.93 * 70
    assert c.derived_params() - plain.derived_params() == 80 * (8192 * 64 * 128 + 2 * 64 * 128)


def test_opt_learned_positions_2048_plus_2():
    o = get_model("opt-175b")
    assert o.embedding_params() == 50272 * 12288 + (2048 + 2) * 12288 + 2 * 12288


def test_deepseek_v3_total_and_activated():
    d = get_model("deepseek-v3")
    # deepseek-v3: 671B total (MTP module excluded), within 0.1 %.
    assert abs(d.params_b / 671 - 1) < 0.001
    # 37B activated. Counting attention, the 3 dense layers, 1 shared + 8 routed experts and both
    # embedding matrices gives 37.55B, 1.5 % above the rounded published 37B: the report does not say
    # how it counts embeddings (the output matrix alone is 0.93B), so the tolerance is 2 %.
    assert d.published_active_params_b == 37
    assert abs(d.active_params_b / 37 - 1) < 0.02
    # The activated part is a small share of the total (no routed expert double counted).
    assert d.active_params_b < 0.06 * d.params_b


def test_dense_models_active_equals_total():
    for m in catalog.models():
        if not m.experts:
            assert m.active_params_b == m.params_b


# --- prices -------------------------------------------------------------------------------

def test_prices_point_at_catalog_gpus():
    ids = {g.id for g in catalog.gpus()}
    for p in catalog.prices():
        assert p.gpu in ids, p.id
        assert p.usd_per_gpu_hour is not None or p.capex_usd_per_gpu is not None


def test_price_defaults():
    # price-deepseek-h800-assumed: $2 per H800 GPU-hour.
    assert price_for("H800").usd_per_gpu_hour == 2.0
    # price-aws-capacity-blocks-p5.48xlarge: $39.33 / 8 GPUs = $4.916; seed 001: $30,000 per H100.
    h100 = price_for("H100")
    assert h100.usd_per_gpu_hour == pytest.approx(39.33 / 8, abs=5e-4)
    # the purchase price is stated with its own source and date, not the AWS rate's: "Capex: $30,000 per GPU, price
    # catalog h100-sxm-aws-capacity-block (2024 ...)" named a rental quote for seed 001's price
    buy = purchase_price("H100")
    assert buy.capex_usd_per_gpu == 30_000 and buy.usd_per_gpu_hour is None
    assert "seed 001" in buy.source and "aws" not in buy.source.lower() and "aws" not in capex_note(buy).lower()
    assert "seed 001" not in h100.source and h100.capex_usd_per_gpu is None
    # price-aws-capacity-blocks-p4d.24xlarge: $14.75 / 8 = $1.844 per A100-40GB hour.
    assert price_for("A100-40GB").usd_per_gpu_hour == pytest.approx(14.75 / 8, abs=5e-4)
    # seed 001: $15,000 per A100-80GB; no dated rental in the sources.
    assert price_for("A100").capex_usd_per_gpu == 15_000 and price_for("A100").usd_per_gpu_hour is None
    assert price_for("V100") is None


# --- malformed catalog files -----------------------------------------------------------------

GOOD_GPU = '''
[[gpu]]
id = "x1"
name = "X1"
vendor = "Acme"
bf16_tflops = 100
source = "datasheet"
'''


def _write(tmp_path, text):
    path = tmp_path / "gpus.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_loader_reads_a_given_file(tmp_path):
    rows = catalog.load("gpus", _write(tmp_path, GOOD_GPU))
    assert rows[0].id == "x1" and rows[0].peak_tflops() == 100


@pytest.mark.parametrize("text, expected", [
    ("[[gpu]\nid = 1", "not valid TOML"),
    (GOOD_GPU.replace('bf16_tflops = 100', 'bf16_tflops = -5'), r"#1 \(x1\) bf16_tflops = -5"),
    (GOOD_GPU.replace('source = "datasheet"\n', ''), r"x1\) source"),
    (GOOD_GPU + 'tflops = 3\n', r"x1\) tflops"),
    (GOOD_GPU.replace('"x1"', '"X 1"'), "id"),
    (GOOD_GPU + GOOD_GPU.replace('"x1"', '"x2"'), "'X1' names both x1 and x2"),
    ("", "gpu"),
])
def test_malformed_file_gives_a_clear_error(tmp_path, text, expected):
    with pytest.raises(CatalogError, match=expected) as err:
        catalog.load("gpus", _write(tmp_path, text))
    assert "gpus.toml" in str(err.value)


def test_missing_file_and_bad_kind(tmp_path):
    with pytest.raises(CatalogError, match="cannot be read"):
        catalog.load("gpus", tmp_path / "absent.toml")
    with pytest.raises(CatalogError, match="valid kinds: gpus, models, prices"):
        catalog.load("tpus")


def test_malformed_model_row(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text('''
[[model]]
id = "m"
name = "M"
layers = 2
hidden = 64
heads = 8
kv_heads = 3
ffn_hidden = 256
vocab = 100
published_params_b = 0.001
source = "a test"
''', encoding="utf-8")
    with pytest.raises(CatalogError, match="kv_heads = 3 must divide heads = 8"):
        catalog.load("models", path)


# --- memory as the card exposes it to CUDA -------------------------------------------------------------------------

def test_cuda_memory_is_the_figure_its_source_prints():
    """cuda_memory_bytes is the quoted figure: bytes where deviceQuery prints bytes, GiB x 2^30 where PyTorch's
    out-of-memory message prints GiB (to 0.01 GiB)."""
    rows = [g for g in catalog.gpus() if g.cuda_memory_bytes is not None]
    assert {g.id for g in rows} >= {"h100-sxm", "a100-80gb", "a100-40gb"}
    for g in rows:
        src = g.cuda_memory_source or ""
        assert "https://" in src, g.id
        exact = re.search(r"\((\d+) bytes\)", src)
        gib = re.search(r"([\d.]+) GiB total capacity|total capacity of ([\d.]+) GiB", src)
        if exact:
            assert g.cuda_memory_bytes == int(exact.group(1)), g.id
        else:
            assert gib, g.id
            assert g.cuda_memory_bytes == pytest.approx(float(gib.group(1) or gib.group(2)) * 2**30, abs=0.005 * 2**30)


def test_capacity_is_cuda_memory_where_sourced_else_nominal():
    h100 = get_gpu("h100-sxm")
    # an "80GB" H100 exposes 79.11 GiB to CUDA: more than 80e9 bytes, less than 80 GiB
    assert 80e9 < h100.capacity_gb * 1e9 < 80 * 2**30
    assert h100.capacity_basis == "cuda"
    h200 = get_gpu("h200")  # no source at hand prints the H200's total_memory: the nominal 141 GB, said so
    assert (h200.capacity_gb, h200.capacity_basis) == (141, "nominal")


def test_cuda_memory_needs_its_source():
    from pydantic import ValidationError as PydanticError

    from xlcalc.catalog import GPU

    with pytest.raises(PydanticError, match="cuda_memory_source"):
        GPU(id="x", name="X", vendor="V", source="a datasheet", memory_gb=80, cuda_memory_bytes=85_000_000_000)


@pytest.mark.parametrize("biases,gated,relative", [(b, g, r) for b in (False, True) for g in (False, True)
                                                   for r in (False, True)])
def test_a_dense_layer_is_the_registered_formula_plus_the_models_extras(biases, gated, relative):
    # One count of a dense layer: Model.layer_params is DENSE_LAYER_PARAMS (what the step-time chain and the StepTime
    # sheet count), biases and relative-position terms included. Checked against the catalog's count by parts (attention +
    # FFN + two norms, with a shift each when the model has biases) for every catalog model without MLA.
    for m in catalog.models():
        if m.kv_lora_rank:
            continue
        m = m.model_copy(update=dict(biases=biases, gated_ffn=gated, relative_positions=relative))
        by_parts = m.attention_params() + m.ffn_params(m.ffn_hidden) + 2 * m.hidden * (2 if biases else 1)
        assert m.layer_params(False) == by_parts, m.id


@pytest.mark.parametrize("kind, typed, meant", [
    ("model", "llama3-8b", "llama3.1-8b"),  # Llama 3 8B: the catalog holds Llama 3.1's
    ("model", "llama3-70b", "llama3.1-70b"),
    ("gpu", "b2000", "b200"),
])
def test_an_unknown_name_says_which_catalog_names_are_close(kind, typed, meant):
    with pytest.raises(CatalogError, match=rf"unknown \w+ '{typed}' \(did you mean {re.escape(meant)}\b.*\?\); valid"):
        getattr(catalog, f"get_{kind}")(typed)


def test_a_name_close_to_nothing_lists_the_valid_ones_without_a_guess():
    with pytest.raises(CatalogError) as err:
        catalog.get_gpu("Z9000")
    assert "did you mean" not in str(err.value) and "valid GPUs: v100" in str(err.value)
