"""The command line: seed 002's case, readable tables, --json, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli_run import SEED002_LAYOUT_FLAGS, run
from xlcalc.cli import main


def test_estimate_reproduces_seed_002_on_a800(capsys):
    # seed 002 §7.3: 70B, 2T tokens, A800 312 TFLOPS, MFU 0.4; 1024 GPUs -> 76 days; 90 days -> 865.6 GPUs
    code, out, _ = run(capsys, "estimate", "--gpu", "A800", "--params-b", "70", "--tokens-t", "2",
                       "--n-gpus", "1024", "--mfu", "0.4", "--deadline-days", "90", "--json")
    assert code == 0
    r = json.loads(out)["results"]
    assert r["Train_FLOPs"] == pytest.approx(8.4e23, rel=1e-12)
    assert round(r["Train_Days"], 2) == 76.08
    assert round(r["GPUs_for_Deadline"], 1) == 865.6


def test_estimate_states_the_gpus_per_node_it_assumed_for_a_gpu_without_one(capsys):
    # the V100 has no published node size: estimate rounded to whole nodes of 8 without a word (plan refuses, the
    # workbook names the GPUs_per_Node cell); now it says so, and a typed --gpus-per-node is used and not flagged
    code, out, _ = run(capsys, "estimate", "--gpu", "v100", "--tp", "8", "--pp", "8")
    assert code == 0 and "Nodes: 8 GPUs per node, the default: the GPU catalog publishes none for v100" in out
    code, out, _ = run(capsys, "estimate", "--gpu", "v100", "--tp", "8", "--pp", "8", "--gpus-per-node", "32", "--json")
    data = json.loads(out)
    assert code == 0 and "nodes" not in data
    # 8.4e23 FLOPs / (125e12 x 0.4 x 90 x 86,400) = 2,160.5 GPUs -> 34 replicas of 64 = 2,176, +5% = 2,284.8,
    # whole nodes of 32: 72 x 32 = 2,304 (by hand, from seed 002's formulas; nodes of 8 would give 2,288)
    assert data["results"]["GPUs_to_Provision"] == 2304
    code, out, _ = run(capsys, "estimate", "--gpu", "h100")
    assert code == 0 and "Nodes:" not in out


def test_estimate_and_plan_take_a_catalog_models_published_tokens_alike(capsys):
    # estimate --model llama3.1-8b trained 2T tokens (seed 002's default) where plan took the model's published 15T
    # (Llama 3.1 model card: "15T+"); both now take it, and estimate says where it came from
    code, out, _ = run(capsys, "estimate", "--model", "llama3.1-8b", "--gpu", "h100", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["scenario"]["tokens_t"] == 15 and "published" in data["tokens"]
    # days = 6 N D / (peak x GPUs x MFU): 8.030261248e9 parameters (the catalog's derived count), 15e12 tokens
    assert data["results"]["Train_Days"] == pytest.approx(
        6 * 8.030e9 * 15e12 / (989.4e12 * 1024 * 0.4) / 86400, rel=1e-3)
    code, out, _ = run(capsys, "plan", "--model", "llama3.1-8b", "--gpu", "h100", "--n-gpus", "64",
                       "--global-batch-tokens", "4194304", "--top", "1", "--json")
    assert code == 0 and json.loads(out)["tokens_t"] == 15
    code, out, _ = run(capsys, "estimate", "--model", "llama3.1-8b", "--tokens-t", "1", "--json")  # typed wins
    assert json.loads(out)["scenario"]["tokens_t"] == 1 and "tokens" not in json.loads(out)


def test_estimate_states_the_sequence_length_and_micro_batch_its_memory_assumes(capsys):
    # the activations scale with them; memory printed s=8192, estimate printed neither
    code, out, _ = run(capsys, "estimate", "--model", "llama3.1-8b", "--gpu", "h100")
    assert code == 0 and "sequences of 8,192 tokens, micro-batch 1" in out  # Llama 3 paper: pre-trained on 8K
    code, out, _ = run(capsys, "estimate", "--seq-len", "2048", "--micro-batch", "2")
    assert code == 0 and "sequences of 2,048 tokens, micro-batch 2" in out


def test_estimate_states_the_budget_its_budget_left_is_counted_against(capsys):
    # "Budget left (negative = over)" was counted against a $10,000,000 budget nobody typed, and said nothing of it
    code, out, _ = run(capsys, "estimate", "--model", "llama3.1-70b", "--gpu", "h100")
    assert code == 0 and "Budget: $10,000,000, not given: an example budget, not yours (give --budget-usd" in out
    code, out, _ = run(capsys, "estimate", "--budget-usd", "2e7", "--json")
    data = json.loads(out)
    assert code == 0 and data["budget"] == "$20,000,000, typed"
    r = data["results"]  # the budget left is the typed budget less every cost line
    assert r["Budget_Left_USD"] == pytest.approx(2e7 - r["Total_Cost_USD"], rel=1e-12)


def test_estimate_on_ascend_910b(capsys):
    # seed 002 §7.3: Ascend 910B at 320 TFLOPS; exact 8.4e23 / (320e12 * 0.4 * 90 * 86400) = 843.9
    code, out, _ = run(capsys, "estimate", "--gpu", "910B", "--params-b", "70", "--json")
    assert code == 0
    assert round(json.loads(out)["results"]["GPUs_for_Deadline"], 1) == 843.9


def test_estimate_prints_a_table_for_people(capsys):
    code, out, _ = run(capsys, "estimate")
    assert code == 0
    assert "Training days" in out and "76.08" in out
    assert "Traceback" not in out
    # no layout given: one GPU's, whose model states alone (70e9 x 18 bytes = 1,260 GB) outgrow the 80 GB card; the
    # answer says so before the table and names the flags that set a layout and the planner
    head = out.split("\nresult ")[0]
    assert "Layout: DOES NOT FIT" in head and "of 80.00 GB" in head and "one GPU's layout" in head
    assert all(f in head for f in ("--tp", "--pp", "--zero-stage", "xlcalc plan"))
    code, out, _ = run(capsys, "estimate", *SEED002_LAYOUT_FLAGS)
    assert code == 0 and "DOES NOT FIT" not in out and "Layout:" not in out


def test_estimate_takes_a_precision_recipe(capsys):
    # Megatron recipe 2 + 4 + 12 bytes/param, ZeRO-1 over DP = 1024 / 16 = 64; the first of PP 4 stages holds
    # 20 of 80 layers ((70e9 - 2 x 32000 x 8192) / 80 parameters each) and the 32000 x 8192 input embedding, / TP 4:
    # (2 + 4) * psi + 12 * psi / 64 GB
    code, out, _ = run(capsys, "estimate", "--recipe", "megatron", "--params-b", "70", *SEED002_LAYOUT_FLAGS, "--json")
    assert code == 0
    vh = 32000 * 8192 / 1e9
    psi = (20 * (70 - 2 * vh) / 80 + vh) / 4
    data = json.loads(out)
    assert data["results"]["Mem_Static_GB"] == pytest.approx(6 * psi + 12 * psi / 64)
    assert data["recipe"].startswith("megatron 2+4+12")


def test_memory_breakdown_seed_002_tp8(capsys):
    # seed 002 §7.3 step 1: 14 bytes/param x 70B / TP 8 = 122.5 GB of model states
    # (one pipeline stage: it holds every parameter, both embedding tables included)
    code, out, _ = run(capsys, "memory", "--params-b", "70", "--layers", "80", "--hidden", "8192", "--heads", "64",
                       "--vocab", "32000", "--seq-len", "4096", "--tp", "8", "--recipe", "seed002", "--gpu", "A800",
                       "--json")
    assert code == 0
    data = json.loads(out)
    assert data["static_gb"] == pytest.approx(122.5)
    assert data["recipe"].startswith("seed002 2+4+8")
    b = data["stages"]["first"]["parts_gb"]
    assert b["weights"] == pytest.approx(2 * 70 / 8) and b["gradients"] == pytest.approx(4 * 70 / 8)
    assert b["optimizer"] == pytest.approx(8 * 70 / 8)
    assert data["total_gb"] == pytest.approx(sum(b.values()))
    assert data["fits"] is False and data["max_micro_batch"] == 0


def test_memory_table_shows_each_component(capsys):
    code, out, _ = run(capsys, "memory", "--model", "llama2-70b", "--tp", "8", "--gpu", "A800")
    assert code == 0
    for word in ("Weights", "Gradients", "Optimizer", "Activations", "Logits", "Other", "total", "first stage",
                 "recipe: megatron", "fit: DOES NOT FIT"):
        assert word in out
    # 70B x 18 bytes / TP 8 = 157.5 GB of model states on an 80 GB card: the answer names what sets a layout
    assert "a layout that fits:" in out and all(f in out for f in ("--tp", "--pp", "--zero-stage", "xlcalc plan"))
    # TP 8, PP 4, ZeRO-1 over DP 32: 70e9 x (2 + 4) / 32 + 70e9 x 12 / 32 / 32 bytes of states, well inside 80 GB
    code, out, _ = run(capsys, "memory", "--model", "llama2-70b", "--tp", "8", "--pp", "4", "--dp", "32",
                       "--zero-stage", "1", "--recompute", "full", "--gpu", "A800")
    assert code == 0 and "fit: FITS" in out and "a layout that fits:" not in out


def test_catalog_lists_and_shows(capsys):
    code, out, _ = run(capsys, "catalog", "gpus")
    assert code == 0 and "h100-sxm" in out
    code, out, _ = run(capsys, "catalog", "gpus", "h100", "--json")
    assert code == 0 and json.loads(out)["id"] == "h100-sxm"


def test_catalog_prices_of_a_gpu_are_that_gpus_rows(capsys):
    from xlcalc import catalog
    # `catalog prices h100`: the rows of xlcalc/data/prices.toml whose gpu is the H100 SXM, and only those
    expected = sorted(p.id for p in catalog.prices() if p.gpu == "h100-sxm")
    code, out, _ = run(capsys, "catalog", "prices", "H100", "--json")
    assert code == 0 and sorted(r["id"] for r in json.loads(out)) == expected and len(expected) >= 2
    code, out, _ = run(capsys, "catalog", "prices", "h100")
    assert code == 0 and f"{len(expected)} prices of h100-sxm" in out and "h200" not in out
    code, out, _ = run(capsys, "catalog", "prices", "v100")  # a GPU the price catalog has no row of
    assert code == 0 and "holds no price of v100: give yours with --usd-per-gpu-hour" in out
    code, out, err = run(capsys, "catalog", "prices", "h100-sxm-aws-on-demand")  # a price id is still one row
    assert code == 0 and "12.29" in out
    code, _, err = run(capsys, "catalog", "prices", "zzz")
    assert code == 2 and "unknown price 'zzz'; valid prices (or a GPU name, for its prices): h800-deepseek" in err


@pytest.mark.parametrize(
    "argv, words",
    [
        (["estimate", "--mfu", "1.5"], "mfu = 1.5 is not allowed"),
        (["estimate", "--n-gpus", "0"], "n_gpus = 0 is not allowed"),
        (["estimate", "--zero-stage", "5"], "zero_stage = 5"),
        (["estimate", "--recompute", "sometimes"], "recompute = 'sometimes'"),
        (["estimate", "--gpu", "Z9000"], "unknown GPU 'Z9000'; valid GPUs:"),
        (["estimate", "--recipe", "bf16"], "recipe = 'bf16' is not allowed"),
        (["memory", "--model", "llama2-70b", "--tp", "3"], "tp = 3 is not allowed"),
    ],
)
def test_user_mistakes_exit_2_with_one_clear_line(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert words in err
    assert "Traceback" not in err


def test_no_traceback_from_the_real_console_entry():
    proc = subprocess.run([sys.executable, "-m", "xlcalc", "estimate", "--mfu", "abc"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "mfu = 'abc' is not allowed" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("argv, hint", [
    (["estimate", "--days", "30"], "--days: did you mean --deadline-days?"),  # budget's old spelling
    (["goodput", "--save", "30"], "--save: did you mean --ckpt-save-s?"),
    (["calibrate", "--gpu", "h100", "--out", "p.json", "--tokens-per-sec", "3"], "did you mean --tokens-per-s?"),
    (["cost", "--mfu", "0.4"], None),  # nothing alike: no guess
])
def test_a_neighbouring_commands_flag_is_named_with_the_command(capsys, argv, hint):
    # it was the top-level "usage: xlcalc [-h] [--version] COMMAND ... xlcalc: error: unrecognized arguments"
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and f"xlcalc {argv[0]}: error: unrecognized arguments: " in err
    assert f"see xlcalc {argv[0]} --help" in err and "COMMAND ..." not in err
    assert (hint in err) if hint else "did you mean" not in err


def test_help_everywhere(capsys):
    for argv in ([], ["estimate"], ["memory"], ["catalog"], ["plan"], ["workbook"], ["read"]):
        with pytest.raises(SystemExit) as info:
            main([*argv, "--help"])
        assert info.value.code == 0
        assert "usage:" in capsys.readouterr().out


def test_memory_optimizer_step_and_autocast_copies(capsys, tmp_path):
    # Llama 3.1 8B's config.json, fp32 weights under autocast, foreach AdamW (4-byte temporaries), gradients freed:
    # the step (grads 4 x 8.03e9 + temporaries 4 x 8.03e9) outweighs the activations at 4K tokens, so the total is
    # weights 4 + optimizer 8 + gradients 4 + temporaries 4 bytes per parameter
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
                               "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                               "vocab_size": 128256}))
    args = ("memory", "--config", str(cfg), "--seq-len", "4096", "--recipe", "fp32", "--grads-freed",
            "--autocast-copy-bytes", "2", "--optimizer-step-bytes", "4", "--overhead-gb", "0")
    code, out, _ = run(capsys, *args, "--json")
    assert code == 0
    r = json.loads(out)
    n = r["inputs"]["params_b"]
    assert r["optimizer_step_gb"] == pytest.approx(4 * n)
    assert r["total_gb"] == pytest.approx(20 * n)
    code, text, _ = run(capsys, *args)
    assert code == 0 and "optimizer step temporaries: 32.12 GB at the step" in text
    code, _, err = run(capsys, *args[:-4], "--autocast-copy-bytes", "-1")
    assert code == 2 and "autocast_copy_bytes = -1 is not allowed" in err


def test_memory_checks_the_card_as_cuda_exposes_it_and_says_which(capsys):
    args = ("memory", "--model", "llama3.1-8b", "--seq-len", "8192", "--tp", "2", "--pp", "2", "--n-gpus", "64",
            "--zero-stage", "1", "--recompute", "selective")
    code, out, _ = run(capsys, *args, "--gpu", "h100", "--json")
    assert code == 0
    got = json.loads(out)
    # vllm-project/vllm#27508: an H100 80GB shows "a total capacity of 79.11 GiB"
    assert got["capacity_gb"] == pytest.approx(79.11 * 2**30 / 1e9, abs=0.006)
    assert got["fit"]["capacity_basis"] == "cuda" and got["fit"]["verdict"] == "fits"
    code, out, _ = run(capsys, *args, "--gpu", "h200")
    assert "of 141.00 GB (nominal: no source in the catalog gives what the card exposes to CUDA)" in out
    code, out, _ = run(capsys, *args, "--gpu", "h100", "--memory-gb", "80")
    assert "of 80.00 GB (as given)" in out
