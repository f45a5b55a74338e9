"""`xlcalc plan --config`: any config.json, dense or MoE, under any file name; and every default the plan
assumes stated with its origin.

The architecture numbers are checked against the config.json's own fields, the parameter count computed here
from them (the layer shapes of each ``transformers`` modeling class), not read from the program.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xlcalc.cli import main
from xlcalc.planner.stacks import DEFAULT_STACK

CONFIGS = sorted((Path(__file__).parent / "data" / "hf_configs").glob("*.json"))
GPUS = "512"  # DeepSeek-V3 (671B) needs hundreds of H100s; every other bundled model fits as well
SEQ, SEQUENCES = 4096, 1024


def _params(cfg: dict) -> tuple[float, float]:
    """(total, active) parameters of a config.json, from its fields: embeddings, attention, FFN / experts, norms.

    Left out (each under 0.1 % of the total, as xlcalc's hf_config documents): Qwen2's q/k/v biases, the
    Qwen2-MoE shared-expert gate, Gemma 2's extra pre/post-FFN norms."""
    h, L, a, V = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["vocab_size"]
    kv = cfg.get("num_key_value_heads") or a
    kind = cfg["model_type"]
    if kind.startswith("deepseek"):
        nope, rope, vd = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
        q_rank, kv_rank = cfg.get("q_lora_rank"), cfg["kv_lora_rank"]
        q = (h * q_rank + q_rank + q_rank * a * (nope + rope)) if q_rank else h * a * (nope + rope)
        attn = q + h * (kv_rank + rope) + kv_rank + kv_rank * a * (nope + vd) + a * vd * h
    else:
        d = cfg.get("head_dim") or h // a
        attn = h * a * d + 2 * h * kv * d + a * d * h
    dense_ffn = 3 * h * cfg.get("intermediate_size", 0)  # gated: gate, up, down
    if kind == "mixtral":
        e, k, f = cfg["num_local_experts"], cfg["num_experts_per_tok"], cfg["intermediate_size"]
        dense_layers, shared, router = 0, 0, h * e
    elif kind == "qwen2_moe":
        e, k, f = cfg["num_experts"], cfg["num_experts_per_tok"], cfg["moe_intermediate_size"]
        dense_layers, shared, router = len(cfg.get("mlp_only_layers") or []), 3 * h * cfg[
            "shared_expert_intermediate_size"], h * e
    elif kind.startswith("deepseek"):
        e, k, f = cfg["n_routed_experts"], cfg["num_experts_per_tok"], cfg["moe_intermediate_size"]
        dense_layers = cfg.get("first_k_dense_replace", 0)
        shared, router = cfg.get("n_shared_experts", 0) * 3 * h * f, h * e + e  # + the routing bias
    else:
        e = k = f = 0
        dense_layers, shared, router = L, 0, 0
    moe_layers = L - dense_layers
    norms = 2 * h
    total = dense_layers * (attn + dense_ffn + norms) + moe_layers * (attn + e * 3 * h * f + shared + router + norms)
    active = total - moe_layers * (e - k) * 3 * h * f
    tied = cfg.get("tie_word_embeddings", kind.startswith("gemma"))
    embeddings = V * h * (1 if tied else 2) + h  # + the final norm
    return total + embeddings, active + embeddings


def _plan(capsys, path: Path, *extra: str) -> dict:
    code = main(["plan", "--config", str(path), "--gpu", "H100", "--gpus", GPUS, "--seq-len", str(SEQ),
                 "--global-batch-tokens", str(SEQ * SEQUENCES), "--top", "1", "--json", *extra])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "Traceback" not in out.err
    return json.loads(out.out)


@pytest.mark.parametrize("bundled", CONFIGS, ids=lambda p: p.stem)
def test_plan_config_json_plans_the_configs_architecture_whatever_the_file_name(bundled, tmp_path, capsys):
    cfg = json.loads(bundled.read_text(encoding="utf-8"))
    renamed = tmp_path / "config.json"
    renamed.write_bytes(bundled.read_bytes())
    data = _plan(capsys, renamed)
    arch = data["architecture"]
    assert (arch["layers"], arch["hidden"], arch["heads"], arch["vocab"]) == (
        cfg["num_hidden_layers"], cfg["hidden_size"], cfg["num_attention_heads"], cfg["vocab_size"])
    assert arch["kv_heads"] == (cfg.get("num_key_value_heads") or cfg["num_attention_heads"])
    experts = cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts") or 0
    assert (arch["experts"], arch["experts_active"]) == (experts, cfg["num_experts_per_tok"] if experts else 0)
    total, active = _params(cfg)
    assert arch["total_params_b"] * 1e9 == pytest.approx(total, rel=1e-3)
    assert arch["active_params_b"] * 1e9 == pytest.approx(active, rel=1e-3)
    assert data["params_b"] == arch["active_params_b"]  # N of 6*N*D: the active parameters of an MoE
    assert data["plans"], f"{bundled.name}: no plan fits {GPUS} H100s"
    p = data["plans"][0]
    assert p["tp"] * p["pp"] * p["cp"] * p["dp"] == int(GPUS)
    # no published token count for a config.json: 20 tokens per parameter (Hoffmann et al. 2022), stated
    assert data["tokens_t"] == pytest.approx(20 * total / 1e12, rel=1e-3)
    tokens = data["assumed"]["tokens_t"]
    assert tokens["value"] == data["tokens_t"] and "20 per parameter" in tokens["basis"]
    assert "seq_len" not in data["assumed"] and "global_batch_tokens" not in data["assumed"]  # given

    # the same file under its own name: the same plan, numbers for numbers
    original = _plan(capsys, bundled)
    for key in ("architecture", "plans", "rejected", "tokens_t", "params_b", "n_gpus", "seq_len", "global_batch",
                "evaluated", "feasible", "rejected_by_reason"):
        assert original[key] == data[key], key
    assert {k: v["value"] for k, v in original["assumed"].items()} == {k: v["value"] for k, v in data["assumed"].items()}


def test_plan_config_tokens_given_are_planned_and_not_assumed(tmp_path, capsys):
    renamed = tmp_path / "config.json"
    renamed.write_bytes((CONFIGS[0].parent / "mistral-7b-v0.1.json").read_bytes())
    data = _plan(capsys, renamed, "--tokens-t", "1.5")
    assert data["tokens_t"] == 1.5 and "tokens_t" not in data["assumed"]
    p = data["plans"][0]
    # days = tokens / (tokens per second per GPU x GPUs) / 86400
    assert p["days"] == pytest.approx(1.5e12 / (p["tokens_per_s_per_gpu"] * int(GPUS)) / 86400, rel=1e-9)


def test_a_catalog_models_published_tokens_are_planned_unless_given(capsys):
    argv = ["plan", "--model", "llama3.1-405b", "--gpu", "H100", "--gpus", "16384", "--top", "1", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    # The Llama 3 Herd of Models (arXiv 2407.21783): 405B pre-trained on 15.6T tokens (20 per parameter: 8.1T)
    assert data["tokens_t"] == 15.6
    assert data["assumed"]["tokens_t"]["basis"].startswith("published, ")
    assert main(argv + ["--tokens-t", "2"]) == 0
    given = json.loads(capsys.readouterr().out)
    assert given["tokens_t"] == 2 and "tokens_t" not in given["assumed"]
    assert given["plans"][0]["days"] == pytest.approx(data["plans"][0]["days"] * 2 / 15.6, rel=1e-9)


def test_every_default_is_stated_in_text_and_json(capsys):
    """Sequence length, global batch, tokens, stack profile and price, none given: each named with its value and
    origin, the same in the text output's Assumed block and in --json's "assumed"."""
    argv = ["plan", "--model", "deepseek-v3", "--gpu", "H800", "--gpus", "2048", "--top", "1"]
    assert main(argv + ["--json"]) == 0
    assumed = json.loads(capsys.readouterr().out)["assumed"]
    assert set(assumed) == {"seq_len", "global_batch_tokens", "tokens_t", "stack", "usd_per_gpu_hour"}
    # DeepSeek-V3 Technical Report §4.2: sequences of 4K tokens, batch 15,360 sequences, 14.8T tokens
    assert (assumed["seq_len"]["value"], assumed["global_batch_tokens"]["value"]) == (4096, 15360 * 4096)
    assert assumed["tokens_t"]["value"] == 14.8 and assumed["stack"]["value"] == DEFAULT_STACK
    assert main(argv) == 0
    text = capsys.readouterr().out
    block = text[text.index("Assumed"):].split("\n\n")[0].splitlines()[1:]
    assert len(block) == len(assumed)
    for line, (name, a) in zip(block, assumed.items()):
        assert a["shown"] in line and a["basis"] in line and f"--{name.replace('_', '-')}" in line
    # given, nothing of it is assumed
    assert main(argv + ["--json", "--seq-len", "4096", "--global-batch-tokens", "62914560", "--tokens-t", "14.8",
                        "--stack", "megatron", "--usd-per-gpu-hour", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["assumed"] == {}
    assert main(argv + ["--seq-len", "4096", "--global-batch-tokens", "62914560", "--tokens-t", "14.8",
                        "--stack", "megatron", "--usd-per-gpu-hour", "2"]) == 0
    assert "Assumed" not in capsys.readouterr().out


def test_the_price_assumed_is_the_price_the_costs_use(capsys):
    assert main(["plan", "--model", "llama3.1-405b", "--gpu", "H100", "--gpus", "16384", "--top", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    price = data["assumed"]["usd_per_gpu_hour"]
    p = data["plans"][0]
    assert price["basis"].startswith("price catalog ")
    assert p["cost_usd"] == pytest.approx(p["gpu_hours"] * price["value"], rel=1e-9)


def test_a_config_json_is_named_after_where_it_lies(tmp_path, capsys):
    """A config.json names no model (_name_or_path is empty in a saved config): the plan is titled by its folder,
    a Hugging Face cache folder models--org--name/snapshots/<commit>/ by org/name; any other file by its name."""
    bundled = CONFIGS[0].parent / "llama-2-7b.json"
    cache = tmp_path / "models--meta-llama--Llama-2-7b-hf" / "snapshots" / ("0123456789abcdef" * 3)[:40]
    folder = tmp_path / "Llama-2-7b-hf"
    for where in (cache, folder):
        where.mkdir(parents=True)
        (where / "config.json").write_bytes(bundled.read_bytes())
    assert _plan(capsys, cache / "config.json")["model"] == "meta-llama/Llama-2-7b-hf"
    assert _plan(capsys, folder / "config.json")["model"] == "Llama-2-7b-hf"
    assert _plan(capsys, bundled)["model"] == "llama-2-7b"


def test_a_config_json_named_like_a_catalog_model_is_not_that_model(tmp_path, capsys):
    """A Llama 2 7B config.json in a folder called llama3.1-405b plans Llama 2 7B's architecture with 20 tokens per
    parameter, never the catalog's Llama 3.1 405B or its published 15.6T tokens."""
    cfg = json.loads((CONFIGS[0].parent / "llama-2-7b.json").read_text(encoding="utf-8"))
    folder = tmp_path / "llama3.1-405b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    data = _plan(capsys, folder / "config.json")
    assert data["model"] == "llama3.1-405b" and data["architecture"]["layers"] == cfg["num_hidden_layers"] == 32
    assert "20 per parameter" in data["assumed"]["tokens_t"]["basis"]
    assert data["tokens_t"] == pytest.approx(20 * _params(cfg)[0] / 1e12, rel=1e-3)


def test_with_no_stack_the_best_layout_is_shown_on_every_named_stack(capsys):
    from xlcalc.planner.stacks import STACKS

    args = ["plan", "--model", "llama3.1-70b", "--gpu", "H100", "--n-gpus", "1024", "--seq-len", "8192",
            "--global-batch-tokens", str(8192 * 1024), "--tokens-t", "15", "--top", "1", "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    best, spread = out["plans"][0], out["stack_spread"]
    assert list(spread) == list(STACKS)
    assert any(o is not None and o["same_layout"] for o in spread.values())
    for sid, o in spread.items():
        if o is None:
            continue
        # days from the step time, computed here: tokens / (tokens per step / step seconds) / seconds per day
        assert o["days"] == pytest.approx(15e12 / (8192 * 1024 / o["step_s"]) / 86400, rel=1e-6)
        # the same layout planned with the stack named and the layout pinned through the CLI's own flags; where it
        # does not fit that stack's memory, the stack's own best plan (the stack named, nothing pinned)
        pinned = ["--stack", sid, "--tp", str(best["tp"]), "--pp", str(best["pp"]), "--cp", str(best["cp"]),
                  "--zero-stage", str(best["zero_stage"]), "--recompute", best["recompute"],
                  "--micro-batch", str(best["micro_batch"]), "--virtual-stages", str(best["virtual_stages"]),
                  "--seq-parallel", "true" if best["seq_parallel"] else "false"]
        assert main(args + (pinned if o["same_layout"] else ["--stack", sid])) == 0
        named = json.loads(capsys.readouterr().out)
        assert named["stack_spread"] == {}  # a stack named: nothing assumed, no spread
        assert named["plans"][0]["days"] == pytest.approx(o["days"], rel=1e-9)
        assert named["plans"][0]["memory_gb"] == pytest.approx(o["memory_gb"], rel=1e-9)
