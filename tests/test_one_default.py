"""One flag name, one form and one default per input across every command (issue 22, item 1).

Each command's parser is built in-process (``xlcalc.cli.build_parser``); what a flag's help states is compared with
the one declaration of the default (the scenario's field default, ``xlcalc.scenario.Scenario``), and the numbers
the commands compute from left-out inputs are checked against a calculation written here. The worksheet functions'
argument defaults are compared with the same declarations (and ``xlcalc.recipes``), and the sequence length of a
model read from a config.json with the one default sequence length on every command.
"""

from __future__ import annotations

import argparse
import json
import re

import pytest

from cli_run import run
from xlcalc.cli import COMMANDS, build_parser
from xlcalc.frameworks import DEFAULT_FRAMEWORK
from xlcalc.recipes import DEFAULT_RECIPE, MEMORY_DEFAULTS
from xlcalc.scenario import Scenario


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: sub.choices[name] for name in COMMANDS}


def _documented(p: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in p._actions if a.option_strings and a.help != argparse.SUPPRESS and a.dest != "help"]


def _stated_help(p: argparse.ArgumentParser, a: argparse.Action) -> str:
    """The help text as --help prints it (the formatter's "(default: X)" included), on one line."""
    return p._get_formatter()._expand_help(a)


_DEFAULT = re.compile(r"\(default:? ([^);,]+)")


def _stated_default(text: str):
    """The fixed default a help text states, as a value; None where it states none or a derived one."""
    m = _DEFAULT.search(text)
    if not m:
        return None
    word = m.group(1).strip()
    if word.upper() in ("TRUE", "FALSE"):
        return word.upper() == "TRUE"
    try:
        return float(word.replace(",", ""))
    except ValueError:
        return word if re.fullmatch(r"[a-z_]+", word) else None  # a choice (selective); else derived


COMMAND_PARSERS = _commands()
FIELDS = Scenario.model_fields


def test_each_documented_flag_is_its_input_name_with_dashes():
    # one spelling per input: the flag is the input's name (plan's --gpus is --n-gpus), one documented per input
    for command, p in COMMAND_PARSERS.items():
        seen: dict[str, list[str]] = {}
        for a in _documented(p):
            longs = [o for o in a.option_strings if o.startswith("--")]
            seen.setdefault(a.dest, []).extend(longs)
            assert longs == ["--" + a.dest.replace("_", "-")], (command, a.option_strings, a.dest)
        assert all(len(v) == 1 for v in seen.values()), (command, {k: v for k, v in seen.items() if len(v) > 1})


# the old spellings: still accepted, hidden from --help (command, old flag, the input it sets)
OLD = [("plan", "--gpus", "n_gpus"), ("plan", "--no-seq-parallel", "seq_parallel"),
       ("plan", "--no-flash-attention", "flash_attention"), ("memory", "--no-flash-attention", "flash_attention"),
       ("cost", "--usd-per-kwh", "own_usd_per_kwh"), ("budget", "--usd-per-kwh", "own_usd_per_kwh"),
       ("budget", "--days", "deadline_days"), ("goodput", "--save-s", "ckpt_save_s")]


@pytest.mark.parametrize("command,old,dest", OLD)
def test_old_spellings_are_hidden_aliases_of_the_one_flag(command, old, dest):
    p = COMMAND_PARSERS[command]
    hidden = [a for a in p._actions if old in a.option_strings]
    assert hidden and all(a.help == argparse.SUPPRESS and a.dest == dest for a in hidden)
    assert not re.search(re.escape(old) + r"(?![-\w])", p.format_help())
    assert "--" + dest.replace("_", "-") in p.format_help()


def test_an_input_several_commands_take_states_one_default_the_declared_one():
    # every stated fixed default of a scenario input equals the scenario's; a layout input's is the memory model's
    # (xlcalc.recipes.MEMORY_DEFAULTS, one GPU) on every command, and the scenario's field is that same default
    layout = {"tp", "pp", "zero_stage", "seq_parallel", "recompute", "micro_batch"}
    assert {k: FIELDS[k].default for k in layout} == {k: MEMORY_DEFAULTS[k] for k in layout}
    taken: dict[str, set[str]] = {}
    checked = 0
    for command, p in COMMAND_PARSERS.items():
        for a in _documented(p):
            if a.dest not in FIELDS:
                continue
            taken.setdefault(a.dest, set()).add(command)
            stated = _stated_default(_stated_help(p, a))
            if stated is None:  # required, searched or derived (from --model, the GPU's): no fixed default
                continue
            declared = (MEMORY_DEFAULTS[a.dest] if a.dest in layout
                        else DEFAULT_RECIPE if a.dest == "recipe" else DEFAULT_FRAMEWORK if a.dest == "framework"
                        else FIELDS[a.dest].default)
            if isinstance(stated, float):
                assert stated == pytest.approx(float(declared)), (command, a.dest, stated, declared)
            else:
                assert stated == declared, (command, a.dest, stated, declared)
            checked += 1
    shared = {d for d, c in taken.items() if len(c) > 1}
    for name in ("n_gpus", "kw_per_gpu", "pue", "own_usd_per_kwh", "mfu", "deadline_days", "depreciation_years",
                 "utilisation", "gpus_per_node", "restart_s", "ckpt_save_s", "seq_parallel", "flash_attention"):
        assert name in shared, name
    assert checked > 100


def test_no_flag_states_two_defaults():
    for command, p in COMMAND_PARSERS.items():
        for a in _documented(p):
            text = _stated_help(p, a)
            assert text.count("(default") <= 1, (command, a.option_strings, text)
    estimate = COMMAND_PARSERS["estimate"].format_help()
    assert "(default: None)" not in estimate and "(default 70)" in estimate.replace("\n", " ")


def test_cost_and_budget_use_the_declared_power_pue_and_electricity(capsys):
    sc = Scenario()
    code, out, _ = run(capsys, "cost", "--capex-usd-per-gpu", "15000", "--json")
    assert code == 0
    used = json.loads(out)["inputs"]
    assert (used["n_gpus"], used["kw_per_gpu"], used["pue"], used["usd_per_kwh"]) == (
        sc.n_gpus, sc.kw_per_gpu, sc.pue, sc.own_usd_per_kwh)
    # budget --own: a busy owned GPU-hour = capex / (years x 8760 h x utilisation) + kW x PUE x $/kWh, by hand
    rate = 30000 / (sc.depreciation_years * 8760 * sc.utilisation) + sc.kw_per_gpu * sc.pue * sc.own_usd_per_kwh
    code, out, _ = run(capsys, "budget", "--budget-usd", "1e6", "--gpu", "h100", "--own", "--capex-usd-per-gpu",
                       "30000", "--json")
    assert code == 0
    rows = {r["key"]: r["value"] for r in json.loads(out)["rows"]}
    assert rows["gpu_hours"] == pytest.approx(1e6 / rate)


def _same_json(capsys, a: tuple[str, ...], b: tuple[str, ...]) -> dict:
    code_a, out_a, err_a = run(capsys, *a, "--json")
    code_b, out_b, err_b = run(capsys, *b, "--json")
    assert code_a == code_b == 0, (err_a, err_b)
    assert json.loads(out_a) == json.loads(out_b)
    return json.loads(out_a)


def test_old_spellings_give_the_same_answer(capsys):
    _same_json(capsys, ("cost", "--gpu", "h100", "--usd-per-kwh", "0.11"),
               ("cost", "--gpu", "h100", "--own-usd-per-kwh", "0.11"))
    _same_json(capsys, ("budget", "--budget-usd", "1e6", "--gpu", "h100", "--days", "30"),
               ("budget", "--budget-usd", "1e6", "--gpu", "h100", "--deadline-days", "30"))
    data = _same_json(capsys, ("goodput", "--save-s", "30"), ("goodput", "--ckpt-save-s", "30"))
    assert data["save_s"] == 30
    base = ("memory", "--model", "llama3.1-8b")
    data = _same_json(capsys, (*base, "--no-flash-attention"), (*base, "--flash-attention", "false"))
    assert data["inputs"]["flash_attention"] is False


def test_plan_takes_n_gpus_and_its_old_gpus(capsys):
    base = ("plan", "--model", "llama3.1-8b", "--gpu", "h100", "--seq-len", "8192", "--global-batch-tokens",
            "1048576", "--tp", "1", "--pp", "1", "--recompute", "none", "--top", "1")
    data = _same_json(capsys, (*base, "--gpus", "8", "--no-seq-parallel"),
                      (*base, "--n-gpus", "8", "--seq-parallel", "false"))
    assert data["n_gpus"] == 8 and data["plans"][0]["seq_parallel"] is False


@pytest.mark.parametrize("command", ["estimate", "memory"])
def test_a_switch_takes_both_forms(capsys, command):
    base = (command, "--model", "llama3.1-8b", "--tp", "2")
    key = "scenario" if command == "estimate" else "inputs"
    on = _same_json(capsys, (*base, "--seq-parallel"), (*base, "--seq-parallel", "TRUE"))
    off = _same_json(capsys, (*base, "--no-seq-parallel"), (*base, "--seq-parallel", "false"))
    assert on[key]["seq_parallel"] is True and off[key]["seq_parallel"] is False
    code, _, err = run(capsys, *base, "--seq-parallel", "maybe")
    assert code == 2 and "seq_parallel" in err and "TRUE or FALSE" in err and "Traceback" not in err
    if command == "memory":  # every switch that is neither TRUE nor FALSE, at once
        code, _, err = run(capsys, *base, "--seq-parallel", "maybe", "--grads-freed", "2")
        assert code == 2 and "seq_parallel = 'maybe'" in err and "grads_freed = 2" in err


# 126 layers (Llama 3.1 405B) on 16 stages: 7 + 14 x 8 + 7; PP 16 (x the default TP 1) divides the default 1,024 GPUs
SPLIT = "7," + "8," * 14 + "7"


def test_estimate_layers_per_stage_sets_pp(capsys):
    code, out, err = run(capsys, "estimate", "--layers", "126", "--layers-per-stage", SPLIT, "--json")
    assert code == 0, err
    data = json.loads(out)
    sc = data["scenario"]
    assert (sc["pp"], sc["first_stage_layers"], sc["last_stage_layers"]) == (16, 7, 7)
    assert data["memory"]["stages"]["first"]["layers"] == 7
    code, out, _ = run(capsys, "estimate", "--layers", "126", "--layers-per-stage", SPLIT, "--pp", "16", "--json")
    assert code == 0 and json.loads(out)["scenario"]["pp"] == 16


@pytest.mark.parametrize("command", ["estimate", "memory"])
def test_a_pp_that_contradicts_the_stage_list_is_refused(capsys, command):
    code, out, err = run(capsys, command, "--layers", "126", "--hidden", "8192", "--heads", "64", "--params-b", "70",
                         "--layers-per-stage", SPLIT, "--pp", "4")
    assert code == 2 and out == ""
    assert "pp = 4 is not allowed" in err and "16" in err and "Traceback" not in err


def test_memory_and_estimate_share_the_layout_defaults(capsys):
    arch = ("--params-b", "70", "--layers", "80", "--hidden", "8192", "--heads", "64", "--vocab", "32000", "--json")
    code, out, _ = run(capsys, "memory", *arch)
    assert code == 0
    memory = json.loads(out)
    used = memory["inputs"]
    code, out, _ = run(capsys, "estimate", *arch)
    assert code == 0
    estimate = json.loads(out)
    sc = Scenario()
    names = ("tp", "pp", "zero_stage", "seq_parallel", "recompute", "micro_batch", "seq_len")
    assert [used[k] for k in names] == [estimate["scenario"][k] for k in names] == [getattr(sc, k) for k in names]
    # the one default: one GPU (TP 1, PP 1, no ZeRO, no SP, no recompute, one sequence) of 4,096 tokens (Llama 2's)
    assert [used[k] for k in names] == [1, 1, 0, False, "none", 1, 4096]
    # so both hold every parameter's model states on each GPU: 70e9 x (2 + 4 + 12) bytes (Megatron's recipe) = 1,260 GB
    assert memory["static_gb"] == pytest.approx(70 * 18) == estimate["results"]["Mem_Static_GB"]
    assert memory["total_gb"] == pytest.approx(estimate["results"]["Mem_Total_GB"])


# --- the one default sequence length (xlcalc.recipes.DEFAULT_SEQ_LEN) --------------------------------------------

CONFIG = "tests/data/hf_configs/llama-2-7b.json"  # LlamaConfig's defaults: max_position_embeddings 2048


def test_one_declared_sequence_length_4096():
    # the scenario's field, the catalog's config.json model and the flags' architecture all read the one declaration
    from xlcalc.catalog import Model
    from xlcalc.planner.architecture import FLAGS_SEQ_LEN
    from xlcalc.recipes import DEFAULT_SEQ_LEN
    assert DEFAULT_SEQ_LEN == 4096  # Llama 2's training context (Touvron et al. 2023, Table 1)
    assert FIELDS["seq_len"].default == Model.model_fields["seq_len"].default == FLAGS_SEQ_LEN == DEFAULT_SEQ_LEN


def test_a_config_model_has_the_one_sequence_length_on_every_command(capsys, tmp_path):
    from xlcalc.hf_config import model_from_hf_config
    from xlcalc.recipes import DEFAULT_SEQ_LEN
    # a context window other than the default, so a face that took the file's window would show it
    cfg = json.loads(open(CONFIG, encoding="utf-8").read())
    cfg["max_position_embeddings"] = 32768
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    assert model_from_hf_config(path).seq_len == DEFAULT_SEQ_LEN
    # nor is a shorter window a cap: LlamaConfig's 2048 describes Llama 2 7B, trained at 4,096
    assert model_from_hf_config(CONFIG).seq_len == DEFAULT_SEQ_LEN
    code, out, err = run(capsys, "memory", "--config", str(path), "--json")
    assert code == 0, err
    memory = json.loads(out)["inputs"]["seq_len"]
    code, out, err = run(capsys, "estimate", "--config", str(path), "--json")
    assert code == 0, err
    estimate = json.loads(out)["scenario"]["seq_len"]
    code, out, err = run(capsys, "plan", "--config", str(path), "--gpu", "h100", "--n-gpus", "8",
                         "--global-batch-tokens", "1048576", "--top", "1", "--json")
    assert code == 0, err
    planned = json.loads(out)["seq_len"]
    assert memory == estimate == planned == DEFAULT_SEQ_LEN == 4096
    # a given --seq-len wins on both
    for command, key in (("memory", "inputs"), ("estimate", "scenario")):
        code, out, err = run(capsys, command, "--config", str(path), "--seq-len", "1024", "--json")
        assert code == 0 and json.loads(out)[key]["seq_len"] == 1024, err
    # the help says what the file's max_position_embeddings is and what is taken instead
    for command in ("memory", "estimate"):
        text = " ".join(COMMAND_PARSERS[command].format_help().split())
        assert "context window, not the training sequence length" in text and f"else {DEFAULT_SEQ_LEN})" in text


def test_a_catalog_row_states_its_sequence_length(tmp_path):
    # a catalog row's sequence length is published data: a row without one is refused, never given the default
    from xlcalc import catalog
    from xlcalc.errors import CatalogError
    path = tmp_path / "models.toml"
    path.write_text('[[model]]\nid = "m"\nname = "M"\nlayers = 2\nhidden = 64\nheads = 8\nffn_hidden = 256\n'
                    'vocab = 100\nsource = "a test"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match=r"\(m\) seq_len: missing"):
        catalog.load("models", path)
    path.write_text(path.read_text(encoding="utf-8") + "seq_len = 512\n", encoding="utf-8")
    assert catalog.load("models", path)[0].seq_len == 512


# --- the worksheet functions' argument defaults: the one declared default of each input ------------------------

def _declared() -> dict[str, object]:
    """Input name -> its one declared default: the scenario's fields (None: filled from a name, no fixed default),
    the memory model's (xlcalc.recipes.MEMORY_DEFAULTS and the default recipe's bytes), the framework by name,
    Chinchilla's tokens per parameter."""
    from xlcalc.formulas.compute import TOKENS_PER_PARAM
    from xlcalc.recipes import DEFAULT_SEQ_LEN, default_bytes
    declared: dict[str, object] = {k: f.default for k, f in FIELDS.items() if f.default is not None}
    # where the scenario and the memory model both hold an input, they hold the same default
    both = {k for k in {**MEMORY_DEFAULTS, **default_bytes()} if k in declared}
    assert {k: declared[k] for k in both} == {k: {**MEMORY_DEFAULTS, **default_bytes()}[k] for k in both}
    assert len(both) > 30
    declared.update(MEMORY_DEFAULTS, **default_bytes(), framework=DEFAULT_FRAMEWORK, recipe=DEFAULT_RECIPE,
                    tokens_per_param=TOKENS_PER_PARAM)
    assert declared["seq_len"] == DEFAULT_SEQ_LEN == 4096
    return declared


def _worksheet_functions() -> dict[str, object]:
    pytest.importorskip("xlwings")
    import importlib
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "udfs"))
    out: dict[str, object] = {}
    for module in ("xlcalc_udfs", "xlcalc_udf_tables"):  # generated, and the hand-written table functions
        mod = importlib.import_module(module)
        out.update({n: f for n in mod.__all__ if callable(f := getattr(mod, n))} if module == "xlcalc_udfs"
                   else {n: getattr(mod, n) for n in mod.TABLE_UDFS})
    return out


# The second defaults still standing, each a different statement than the declared one (a change of these would
# move what existing worksheets compute): the fine-tuning functions take job "lora", as --job does when adapters
# are given (xlcalc memory: "default full, or lora when --lora-rank is given"); DP communication counts one
# micro-batch per step, where the memory model's 1,000,000 means "as many as fill the pipeline" (only
# min(in flight, micro-batches) counts there), no count of gradient reductions.
SECOND_DEFAULTS = {
    **{(f, "job"): "lora" for f in ("ADAPTER_PARAMS_B", "FT_TRAINABLE_PARAMS_B", "MEM_FT_WEIGHTS_GB",
                                    "ACT_FROZEN_SAVING_BYTES", "FT_FLOPS_PER_TOKEN", "FT_TRAIN_FLOPS", "FT_TRAIN_DAYS",
                                    "FT_GPU_HOURS", "FT_GPUS_FOR_DAYS")},
    **{(f, "microbatches"): 1 for f in ("DP_COMM_BYTES", "DP_COMM_TIME_S", "DP_COMM_TIME_HIERARCHICAL_S")},
}


def test_every_worksheet_functions_default_is_the_inputs_declared_one():
    import inspect
    declared = _declared()
    functions = _worksheet_functions()
    assert {"MEM_STATIC_GB", "MEM_PER_GPU_GB", "LAYER_ACTIVATION_BYTES", "PLAN", "GPU_PRICE"} <= set(functions)
    differ: dict[tuple[str, str], object] = {}
    checked = 0
    for name, fn in functions.items():
        for p in inspect.signature(fn).parameters.values():  # type: ignore[arg-type]
            # None: filled from other inputs (MEM_PER_GPU_GB's bytes: the framework's; PLAN's tokens: the catalog's)
            if p.default is inspect.Parameter.empty or p.default is None or p.name not in declared:
                continue
            want = declared[p.name]
            same = p.default == want and isinstance(p.default, bool) == isinstance(want, bool)
            if not same:
                differ[(name, p.name)] = p.default
            checked += 1
    assert differ == SECOND_DEFAULTS
    assert checked > 200
    # pinned by hand: the default recipe's gradients (Megatron, 4 bytes), 4 GB other memory, no gated FFN, TP 1,
    # Chinchilla's 20 tokens per parameter, 15% of compute lost to failures (seed 000: 10-20%)
    sig = {n: inspect.signature(functions[n]).parameters
           for n in ("MEM_STATIC_GB", "MEM_TOTAL_GB", "ACT_FFN_BYTES", "BUDGET_PARAMS_B", "TOTAL_COST_USD")}
    assert (sig["MEM_STATIC_GB"]["bytes_grads"].default, sig["MEM_TOTAL_GB"]["overhead_gb"].default,
            sig["ACT_FFN_BYTES"]["gated_ffn"].default, sig["ACT_FFN_BYTES"]["tp"].default,
            sig["BUDGET_PARAMS_B"]["tokens_per_param"].default, sig["TOTAL_COST_USD"]["failure_frac"].default
            ) == (4, 4.0, False, 1, 20, 0.15)
    assert FIELDS["failure_frac"].default == 0.15


def test_the_step_times_stack_and_batch_are_plans_flags_with_the_scenarios_defaults():
    # the scenario's stack and global batch (the workbook's Stack and Global_Batch_Tokens) are plan's and calibrate's
    # --stack and --global-batch-tokens: the stack's one default, and no fixed batch (a catalog model's published one)
    from xlcalc.planner.stacks import DEFAULT_STACK
    assert FIELDS["stack"].default == DEFAULT_STACK == "fsdp-eager" and FIELDS["global_batch_tokens"].default is None
    for command in ("plan", "calibrate"):
        p = COMMAND_PARSERS[command]
        helps = {a.dest: _stated_help(p, a) for a in _documented(p)}
        assert f"(default {DEFAULT_STACK}:" in helps["stack"], command
        batch = " ".join(helps["global_batch_tokens"].split())
        if command == "calibrate":  # the measured run's batch: required, no default (calibrate refuses without it)
            assert "(required)" in batch and "default" not in batch, batch
        else:
            assert "published pre-training batch" in batch, command
    # estimate computes no step time: it takes neither
    estimate = {a.dest for a in _documented(COMMAND_PARSERS["estimate"])}
    assert not {"stack", "global_batch_tokens"} & estimate
