"""Models from a Hugging Face config.json: parameter counts against the published totals.

Configs: tests/data/hf_configs (see its README). Published totals, each with its source:
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xlcalc import catalog
from xlcalc.errors import InputError
from xlcalc.hf_config import model_from_hf_config, read_hf_config

CONFIGS = Path(__file__).parent / "data" / "hf_configs"

# file -> (published total, published activated or None, source and quote)
PUBLISHED = {
    "llama-2-7b": (6.7, None, "Touvron et al. 2023 (LLaMA) Table 2: 6.7B for the 7B model (same shape as Llama 2 7B); "
                              "published.json llama1-7b"),
    "mistral-7b-v0.1": (7.3, None, "Mistral AI, 'Announcing Mistral 7B' (2023): \"Mistral 7B is a 7.3B parameter model\""),
    "mixtral-8x7b-v0.1": (47, 13, "Jiang et al. 2024, Mixtral of Experts (arXiv 2401.04088) abstract: \"each token has "
                                  "access to 47B parameters, but only uses 13B active parameters during inference\""),
    "qwen1.5-moe-a2.7b": (14.3, 2.7, "Qwen1.5-MoE-A2.7B model card: \"It has 14.3B parameters in total and 2.7B "
                                     "activated parameters during runtime\""),
    "gemma-7b": (0.786825216 + 7.751248896, None, "Gemma Team 2024 (arXiv 2403.08295) Table 2: 7B embedding "
                                                  "786,825,216, non-embedding 7,751,248,896"),
    "gemma-2-2b": (0.590118912 + 2.024517888, None, "Gemma Team 2024, Gemma 2 report Table 2: 2B embedding "
                                                    "590,118,912, non-embedding 2,024,517,888"),
    "deepseek-v3": (671, 37, "DeepSeek-AI 2024, DeepSeek-V3 Technical Report abstract: \"671B total parameters with "
                             "37B activated for each token\"; published.json deepseek-v3"),
}


def _model(stem: str) -> catalog.Model:
    return model_from_hf_config(CONFIGS / f"{stem}.json")


def test_at_least_six_published_models_from_several_families():
    families = {json.loads((CONFIGS / f"{s}.json").read_text())["model_type"] for s in PUBLISHED}
    assert len(PUBLISHED) >= 6
    assert {"llama", "mistral", "mixtral", "qwen2_moe", "gemma", "deepseek_v3"} <= families


@pytest.mark.parametrize("stem", sorted(PUBLISHED))
def test_total_within_1pct_of_published(stem):
    total, _, _ = PUBLISHED[stem]
    m = _model(stem)
    assert abs(m.params_b / total - 1) < 0.01, (stem, m.params_b, total)


@pytest.mark.parametrize("stem", [s for s in sorted(PUBLISHED) if PUBLISHED[s][1]])
def test_activated_within_2pct_of_published(stem):
    # Activated counts are published rounded to two significant digits and without saying how
    # embeddings are counted (DeepSeek-V3: 37.55B counting both embedding matrices, 1.5 % above 37B):
    # the tolerance is 2 %, as for the catalog's DeepSeek-V3 row.
    _, active, _ = PUBLISHED[stem]
    m = _model(stem)
    assert abs(m.active_params_b / active - 1) < 0.02, (stem, m.active_params_b, active)


def test_gemma_split_matches_the_report_table():
    # Tied embeddings: 256,000 x 3,072 (the report's 786,825,216 counts 256,128 rows: padded vocabulary).
    g = _model("gemma-7b")
    assert g.embedding_params() - g.hidden == 256_000 * 3072
    # Non-embedding: 28 x (4 x 3072 x 16 x 256 attention + 3 x 3072 x 24576 GeGLU + 2 norms) + final norm.
    assert g.derived_params() - g.embedding_params() == 28 * (4 * 3072 * 16 * 256 + 3 * 3072 * 24576 + 2 * 3072)
    assert abs((g.derived_params() - g.embedding_params()) / 7_751_248_896 - 1) < 1e-5


def test_same_architecture_as_the_catalog_rows():
    # The config path and the catalog row describe the same network: identical counts.
    assert _model("deepseek-v3").derived_params() == catalog.get_model("deepseek-v3").derived_params()
    assert _model("deepseek-v3").derived_params(active=True) == catalog.get_model("deepseek-v3").derived_params(active=True)
    assert _model("llama-2-7b").derived_params() == catalog.get_model("llama2-7b").derived_params() == 6_738_415_616


def test_mixtral_and_qwen_moe_mapping():
    mx = _model("mixtral-8x7b-v0.1")
    assert (mx.experts, mx.experts_active, mx.moe_ffn_hidden, mx.dense_layers, mx.shared_experts) == (8, 2, 14336, 0, 0)
    q = _model("qwen1.5-moe-a2.7b")
    # shared_expert_intermediate_size 5632 = 4 x moe_intermediate_size 1408: four experts' worth, always active.
    assert (q.experts, q.experts_active, q.moe_ffn_hidden, q.shared_experts) == (60, 4, 1408, 4)


def test_a_config_has_no_published_count_and_names_its_source():
    m = _model("mistral-7b-v0.1")
    assert m.published_params_b is None
    assert "mistral-7b-v0.1.json" in m.source
    assert "context window 131072" in m.notes


def test_every_missing_key_is_named_at_once():
    with pytest.raises(InputError) as info:
        model_from_hf_config({"model_type": "mixtral", "hidden_size": 4096})
    msg = str(info.value)
    for key in ("num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size",
                "num_local_experts", "num_experts_per_tok"):
        assert key in msg


@pytest.mark.parametrize("cfg, words", [
    ({"model_type": "bert"}, "model_type"),
    ({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 0, "num_attention_heads": 32,
      "vocab_size": 32000, "intermediate_size": 11008}, "num_hidden_layers"),
    ({"model_type": "llama", "hidden_size": 4000, "num_hidden_layers": 2, "num_attention_heads": 64,
      "vocab_size": 32000, "intermediate_size": 11008}, "multiple of heads"),
    ({"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16,
      "vocab_size": 151936, "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
      "mlp_only_layers": [5]}, "mlp_only_layers"),
])
def test_bad_configs_get_a_message_naming_the_key(cfg, words):
    with pytest.raises(InputError) as info:
        model_from_hf_config(cfg)
    assert words in str(info.value)


def test_unreadable_files(tmp_path):
    with pytest.raises(InputError, match="readable"):
        read_hf_config(tmp_path / "nope.json")
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="JSON"):
        read_hf_config(bad)
    bad.write_text("[1, 2]")
    with pytest.raises(InputError, match="JSON object"):
        read_hf_config(bad)


def test_cli_shows_the_model_of_a_config():
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-m", "xlcalc", "catalog", "models", "--config",
                          str(CONFIGS / "mixtral-8x7b-v0.1.json"), "--json"],
                         capture_output=True, text=True, cwd=root)
    assert run.returncode == 0, run.stderr
    row = json.loads(run.stdout)
    assert abs(row["params_b_derived"] / 47 - 1) < 0.01
    bad = subprocess.run([sys.executable, "-m", "xlcalc", "catalog", "models", "--config", "missing.json"],
                         capture_output=True, text=True, cwd=root)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "config" in bad.stderr


@pytest.mark.parametrize("command", [
    ["memory", "--seq-len", "4096", "--json"],
    # a config.json has no token count (estimate and plan take a catalog model's published one): its 2 T given to both
    ["estimate", "--seq-len", "4096", "--tp", "1", "--pp", "1", "--n-gpus", "64", "--tokens-t", "2", "--json"],
    ["plan", "--gpu", "h100", "--gpus", "8", "--seq-len", "4096", "--global-batch-tokens", "1048576", "--tokens-t", "2",
     "--json"],
])
def test_commands_take_a_config_instead_of_a_model(command):
    """The Llama-2-7B config and the catalog's llama2-7b row are one architecture: every command gives the same
    answer for both, and refuses to be given both."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent

    def xlcalc(*args):
        return subprocess.run([sys.executable, "-m", "xlcalc", command[0], *args, *command[1:]],
                              capture_output=True, text=True, cwd=root)

    cfg = str(CONFIGS / "llama-2-7b.json")
    from_config, from_catalog = xlcalc("--config", cfg), xlcalc("--model", "llama2-7b")
    assert from_config.returncode == 0, from_config.stderr
    a, b = json.loads(from_config.stdout), json.loads(from_catalog.stdout)
    if command[0] == "estimate":
        a, b = a["results"], b["results"]
    elif command[0] == "plan":
        a, b = a["plans"], b["plans"]
    else:
        a, b = a["per_stage"] if "per_stage" in a else a, b["per_stage"] if "per_stage" in b else b
        a.pop("inputs", None), b.pop("inputs", None)
    assert a == b
    both = xlcalc("--config", cfg, "--model", "llama2-7b")
    assert both.returncode == 2 and "--model" in both.stderr and "Traceback" not in both.stderr
