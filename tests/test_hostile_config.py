"""config.json and scenario TOML files are untrusted input: every hostile file is one clear error naming its key.

Each case is a file written here as data. The Python face must raise InputError naming the key (never
another exception, never a model or scenario built from a coerced value); the command line must exit 2
with the message and no traceback. The expected key is the one the case breaks, by construction.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from xlcalc.cli import main
from xlcalc.errors import InputError
from xlcalc.hf_config import model_from_hf_config
from xlcalc.scenario import load_scenario

LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 8, "vocab_size": 128256, "intermediate_size": 14336, "tie_word_embeddings": False}
QWEN_MOE = {"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16,
            "vocab_size": 151936, "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
            "shared_expert_intermediate_size": 5632, "intermediate_size": 5632}
DEEPSEEK = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
            "vocab_size": 129280, "intermediate_size": 18432, "n_routed_experts": 256, "num_experts_per_tok": 8,
            "moe_intermediate_size": 2048, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
            "v_head_dim": 128, "n_shared_experts": 1, "first_k_dense_replace": 3, "q_lora_rank": 1536}


def js(base: dict, **change) -> str:
    return json.dumps({**base, **change})


def raw(base: dict, key: str, text: str) -> str:
    """``base`` with ``key`` set to the literal JSON text ``text`` (NaN, 5000 digits: what json.dumps won't write)."""
    return json.dumps({**base, key: "@@"}).replace('"@@"', text)


CONFIGS = [  # (case id, file text, key the error must name)
    ("tie-text-false", js(LLAMA, tie_word_embeddings="false"), "tie_word_embeddings"),
    ("tie-text-true", js(LLAMA, tie_word_embeddings="true"), "tie_word_embeddings"),
    ("tie-number", js(LLAMA, tie_word_embeddings=0), "tie_word_embeddings"),
    ("hidden-nan", raw(LLAMA, "hidden_size", "NaN"), "hidden_size"),
    ("hidden-infinity", raw(LLAMA, "hidden_size", "Infinity"), "hidden_size"),
    ("hidden-minus-infinity", raw(LLAMA, "hidden_size", "-Infinity"), "hidden_size"),
    ("hidden-1e400", raw(LLAMA, "hidden_size", "1e400"), "hidden_size"),
    ("hidden-5000-digits", raw(LLAMA, "hidden_size", "9" * 5000), "hidden_size"),
    ("vocab-40-digits", raw(LLAMA, "vocab_size", "1" * 40), "vocab_size"),
    ("unused-key-nan", raw(LLAMA, "rms_norm_eps", "NaN"), "rms_norm_eps"),
    ("hidden-float", js(LLAMA, hidden_size=4096.0), "hidden_size"),
    ("hidden-fraction", js(LLAMA, hidden_size=4096.5), "hidden_size"),
    ("hidden-text", js(LLAMA, hidden_size="4096"), "hidden_size"),
    ("hidden-bool", js(LLAMA, hidden_size=True), "hidden_size"),
    ("layers-negative", js(LLAMA, num_hidden_layers=-32), "num_hidden_layers"),
    ("kv-heads-zero", js(LLAMA, num_key_value_heads=0), "num_key_value_heads"),
    ("head-dim-zero", js(LLAMA, head_dim=0), "head_dim"),
    ("head-dim-list", js(LLAMA, head_dim=[128]), "head_dim"),
    ("model-type-list", js(LLAMA, model_type=["llama"]), "model_type"),
    ("model-type-object", js(LLAMA, model_type={"a": 1}), "model_type"),
    ("name-control-char", js(LLAMA, _name_or_path="llama\x07"), "_name_or_path"),
    ("name-not-text", js(LLAMA, _name_or_path={"x": 1}), "_name_or_path"),
    ("window-text", js(LLAMA, max_position_embeddings="8k"), "max_position_embeddings"),
    ("deep-nesting", raw(LLAMA, "rope_scaling", "[" * 50 + "]" * 50), "rope_scaling"),
    ("very-deep-nesting", raw(LLAMA, "rope_scaling", "[" * 100_000 + "]" * 100_000), "config"),
    ("key-control-char", js(LLAMA, **{"bad\x1bkey": 1}), "bad"),
    ("qwen-sparse-step-text", js(QWEN_MOE, decoder_sparse_step="1"), "decoder_sparse_step"),
    ("qwen-mlp-only-text", js(QWEN_MOE, mlp_only_layers="0,1"), "mlp_only_layers"),
    ("qwen-mlp-only-floats", js(QWEN_MOE, mlp_only_layers=[0.5]), "mlp_only_layers"),
    ("qwen-mlp-only-out-of-range", js(QWEN_MOE, mlp_only_layers=[0, 99]), "mlp_only_layers"),
    ("qwen-shared-text", js(QWEN_MOE, shared_expert_intermediate_size="5632"), "shared_expert_intermediate_size"),
    ("qwen-shared-float", js(QWEN_MOE, shared_expert_intermediate_size=5632.0), "shared_expert_intermediate_size"),
    ("qwen-intermediate-text", js(QWEN_MOE, intermediate_size="5632"), "intermediate_size"),
    ("deepseek-first-k-fraction", js(DEEPSEEK, first_k_dense_replace=2.7), "first_k_dense_replace"),
    ("deepseek-first-k-negative", js(DEEPSEEK, first_k_dense_replace=-1), "first_k_dense_replace"),
    ("deepseek-shared-fraction", js(DEEPSEEK, n_shared_experts=1.5), "n_shared_experts"),
    ("deepseek-q-lora-text", js(DEEPSEEK, q_lora_rank="1536"), "q_lora_rank"),
    ("deepseek-topk-method-list", js(DEEPSEEK, topk_method=["noaux_tc"]), "topk_method"),
    ("deepseek-freq-text", js(DEEPSEEK, moe_layer_freq="1"), "moe_layer_freq"),
]

SCENARIOS = [  # (case id, TOML text, key the error must name)
    ("bool-text-false", 'seq_parallel = "false"\n', "seq_parallel"),
    ("bool-number", "flash_attention = 1\n", "flash_attention"),
    ("int-float", "layers = 80.0\n", "layers"),
    ("int-fraction", "tp = 2.5\n", "tp"),
    ("int-text", 'n_gpus = "1024"\n', "n_gpus"),
    ("float-text", 'mfu = "0.4"\n', "mfu"),
    ("float-bool", "mfu = true\n", "mfu"),
    ("nan", "mfu = nan\n", "mfu"),
    ("infinity", "tokens_t = inf\n", "tokens_t"),
    ("minus-infinity", "budget_usd = -inf\n", "budget_usd"),
    ("huge-int", "n_gpus = " + "9" * 5000 + "\n", "n_gpus"),
    ("int-beyond-floats", "n_gpus = 1000000000000000000000\n", "n_gpus"),
    ("name-control-char", 'name = "plan\\u0007"\n', "name"),
    ("name-escape", 'name = "\\u001b[31mred"\n', "name"),
    ("name-noncharacter", 'name = "plan \\uFFFE"\n', "name"),
    ("notes-control-char", 'notes = "a\\u0000b"\n', "notes"),
    ("name-table", "[name]\nx = 1\n", "name"),
    ("name-date", "name = 1979-05-27\n", "name"),
    ("gpu-list", 'gpu = ["h100"]\n', "gpu"),
    ("key-self", "self = 1\n", "self"),
    ("key-cls", "cls = 1\n", "cls"),
    ("key-unknown", "mfuu = 0.4\n", "mfuu"),
    ("key-control-char", '"ke\\u0007y" = 1\n', "scenario key"),
    ("active-above-total", "params_b = 7\nactive_params_b = 70\n", "active_params_b"),
    ("deep-nesting", "x = " + "[" * 100_000 + "]" * 100_000 + "\n", "scenario"),
]


@pytest.mark.parametrize(("case", "text", "key"), CONFIGS, ids=[c[0] for c in CONFIGS])
def test_hostile_config_json_names_its_key(tmp_path, case, text, key):
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        model_from_hf_config(path)
    assert key in str(exc.value), str(exc.value)


@pytest.mark.parametrize(("case", "text", "key"), SCENARIOS, ids=[c[0] for c in SCENARIOS])
def test_hostile_scenario_toml_names_its_key(tmp_path, case, text, key):
    path = tmp_path / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_scenario(path)
    assert key in str(exc.value), str(exc.value)


def test_there_are_at_least_40_hostile_files():
    assert len(CONFIGS) + len(SCENARIOS) >= 40


@pytest.mark.parametrize(("case", "text", "key"), CONFIGS[::4], ids=[c[0] for c in CONFIGS[::4]])
def test_cli_gives_the_config_error_with_exit_2(tmp_path, capsys, case, text, key):
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    assert main(["catalog", "models", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and key in err and "Traceback" not in err


@pytest.mark.parametrize(("case", "text", "key"), SCENARIOS[::4], ids=[c[0] for c in SCENARIOS[::4]])
def test_cli_gives_the_scenario_error_with_exit_2(tmp_path, capsys, case, text, key):
    path = tmp_path / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    assert main(["workbook", "--scenario", str(path), "-o", str(tmp_path / "out.xlsx")]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and key in err and "Traceback" not in err
    assert not (tmp_path / "out.xlsx").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_fifo_or_a_device_is_refused_before_reading(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)  # nobody writes it: reading it would hang
    for load in (model_from_hf_config, load_scenario):
        with pytest.raises(InputError, match="regular file.*named pipe"):
            load(fifo)
    if sys.platform.startswith("linux"):
        with pytest.raises(InputError, match="regular file.*device"):
            model_from_hf_config("/dev/zero")
    with pytest.raises(InputError, match="regular file.*folder"):
        load_scenario(tmp_path)


def test_an_oversized_file_is_refused_by_its_size(tmp_path):
    big = tmp_path / "config.json"
    with open(big, "wb") as f:
        f.truncate(50_000_000)  # sparse: 50 MB that the loader must not read
    with pytest.raises(InputError, match="at most 1,000,000 bytes"):
        model_from_hf_config(big)
    with pytest.raises(InputError, match="at most 1,000,000 bytes"):
        load_scenario(big)


def test_well_formed_files_still_load(tmp_path):
    for base in (LLAMA, QWEN_MOE, DEEPSEEK):
        path = tmp_path / "config.json"
        path.write_text(json.dumps(base), encoding="utf-8")
        assert model_from_hf_config(path).layers == base["num_hidden_layers"]
    good = tmp_path / "ok.toml"
    good.write_text('name = "plan"\nnotes = "line one\\nline two"\nseq_parallel = false\nlayers = 80\nmfu = 0.4\n'
                    "tokens_t = 2\n", encoding="utf-8")
    sc = load_scenario(good)
    assert (sc.seq_parallel, sc.layers, sc.tokens_t) == (False, 80, 2.0)
