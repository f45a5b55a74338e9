"""Say what you run, not bytes: --framework / --precision and MEM_PER_GPU_GB's framework, precision (xlcalc.frameworks).

Expected values are the facts typed here from the sources each profile cites (not read from the profile table):
bytes per parameter of the recipe, bytes per logit held for the loss, the optimizer step's temporaries, autocast's
weight copies and whether gradients are freed. The CLI with --framework must give what it gives with the same
numbers typed as explicit flags (another path through the program), the worksheet function the CLI's GB, an
explicit input must win over the profile and a bad name must be refused naming the input, the value and the known
names. (The transformers profile against two of the torch harness's configurations measured by PyTorch:
tests/test_memory_harness_torch.py, which measures them all in one process.)
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from requires import require
from xlcalc import catalog
from xlcalc.cli import main
from xlcalc.errors import InputError
from xlcalc.frameworks import (
    DEFAULT_FRAMEWORK,
    DEFAULT_PRECISION,
    FRAMEWORK_ALIASES,
    FRAMEWORKS,
    PRECISIONS,
    get_profile,
    neutral,
    profile_values,
)
from xlcalc.recipes import MEMORY_DEFAULTS
from xlcalc.registry import get_formula
from xlcalc.scenario import Scenario

ROOT = Path(__file__).resolve().parent.parent

# transformers' ForCausalLMLoss upcasts the logits (logits.float()) before eager F.cross_entropy: the fp32
# log-softmax output is saved (4 bytes), and the backward makes its gradient (4) and the input's gradient (4)
HF_LOSS = 4 + 4 + 4
N = None  # no source: the neutral default (MEMORY_DEFAULTS)

# (framework, precision): (weights, grads, optimizer bytes/param, logits bytes, optimizer step bytes, autocast copy
# bytes, grads freed)
FACTS = {
    # Megatron dist_optimizer.md: bf16 params, fp32 main grads, fp32 main params + m + v; vocab-parallel CE on fp32
    # logits (4); FusedAdam (0); Float16Module: no autocast (0); contiguous grad buffer kept (False)
    ("megatron", "amp"): (2, 4, 4 + 4 + 4, 4, 0, 0, False),
    ("megatron", "fp32"): (4, 4, 4 + 4, 4, 0, 0, False),
    # Trainer bf16=True over an fp32 model: fp32 weights + grads + AdamW m, v; autocast keeps bf16 copies (2);
    # adamw_torch_fused default with torch >= 2.8 (0); zero_grad(set_to_none=True) default since PyTorch 2.0
    ("transformers", "amp"): (4, 4, 4 + 4, HF_LOSS, 0, 2, True),
    ("transformers", "bf16"): (2, 2, 2 + 2, HF_LOSS, 0, 0, True),
    ("transformers", "fp32"): (4, 4, 4 + 4, HF_LOSS, 0, 0, True),
    # torchtitan: FSDP2 MixedPrecisionPolicy(bf16 params, fp32 reduce) over fp32 shards; eager CE on .float() logits;
    # optimizer implementation "fused"
    ("torchtitan", "amp"): (4, 4, 4 + 4, HF_LOSS, 0, 0, True),
    # torchtitan with compile enabled: the loss is compiled with the model (train.py from bbb1b616e; Compile.components
    # ['model', 'loss']): the compiled cross-entropy keeps the bf16 logits (2) and gives a bf16 gradient (2)
    ("torchtitan-compile", "amp"): (4, 4, 4 + 4, 2 + 2, 0, 0, True),
    # torchtune: dtype bf16 everywhere, AdamW fused: True, zero_grad(set_to_none=True); LinearCrossEntropyLoss (K = 8):
    # every chunk's fp32 log-softmax output saved, one chunk's gradient and input gradient (4 + 8 / K)
    ("torchtune", "bf16"): (2, 2, 2 + 2, 4 + 8 / 8, 0, 0, True),
    # compile: True compiles LinearCrossEntropyLoss.compute_cross_entropy: the bf16 logits of every chunk saved
    ("torchtune-compile", "bf16"): (2, 2, 2 + 2, 2, 0, 0, True),
    # DeepSpeed ZeRO bf16: 16-bit weights and grads, fp32 master + m + v (K = 12); FusedAdam; model cast to bf16
    ("deepspeed", "amp"): (2, 2, 12, N, 0, 0, N),
    # Composer FSDP mixed_precision DEFAULT over fp32 shards: 4 + 4 + 8, FSDP casts (no autocast copies)
    ("llm-foundry", "amp"): (4, 4, 4 + 4, N, N, 0, N),
}
FIELDS = ("bytes_weights", "bytes_grads", "bytes_optimizer", "logits_buffer_bytes", "optimizer_step_bytes",
          "autocast_copy_bytes", "grads_freed")
# the explicit flags that stand for each input (an independent path through xlcalc memory)
FLAGS = {"bytes_weights": "--bytes-weights", "bytes_grads": "--bytes-grads", "bytes_optimizer": "--bytes-optimizer",
         "logits_buffer_bytes": "--logits-buffer-bytes", "optimizer_step_bytes": "--optimizer-step-bytes",
         "autocast_copy_bytes": "--autocast-copy-bytes"}


def expected(key):
    return {f: MEMORY_DEFAULTS[f] if v is None else v for f, v in zip(FIELDS, FACTS[key])}


def test_every_profile_is_typed_here():
    assert {(f, p) for f, by in FRAMEWORKS.items() for p in by} == set(FACTS)


@pytest.mark.parametrize("key", sorted(FACTS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_profile_bytes_and_flags_are_the_documented_facts(key):
    assert profile_values(*key) == expected(key)
    prof = get_profile(*key)
    # a fact no source gives is named as such, and only those
    gaps = {f for f, v in zip(FIELDS, FACTS[key]) if v is None}
    assert set(neutral(prof)) == gaps
    for name, (_, source) in prof.facts.items():
        assert len(source) > 30 and any(c in source for c in "/."), (key, name, source)


def test_default_is_todays_answer():
    # neither given: Megatron at bf16 mixed precision, which are the model's defaults (2 + 4 + 12 bytes/param)
    assert (DEFAULT_FRAMEWORK, DEFAULT_PRECISION) == ("megatron", "amp")
    assert profile_values() == {"bytes_weights": 2, "bytes_grads": 4, "bytes_optimizer": 12,
                                **{f: MEMORY_DEFAULTS[f] for f in FIELDS[3:]}}
    d = get_formula("MEM_PER_GPU_GB").defaults
    assert {f: d[f] for f in FIELDS} == profile_values()


def test_framework_alone_takes_its_usual_precision():
    assert get_profile("torchtune").precision == "bf16"
    assert get_profile("transformers").precision == "amp"
    assert get_profile("transformers", "default").precision == "amp"
    assert get_profile(" Transformers ", "BF16").precision == "bf16"


# --- the CLI ----------------------------------------------------------------------------------------------------

MODEL = "llama3.1-8b"
BASE = ("memory", "--model", MODEL, "--seq-len", "4096", "--micro-batch", "1", "--json")


def cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def cli_json(capsys, *extra):
    code, out, err = cli(capsys, *BASE, *extra)
    assert code == 0, err
    return json.loads(out)


def explicit_flags(values):
    argv = []
    for f, flag in FLAGS.items():
        argv += [flag, f"{values[f]:g}"]
    return argv + (["--grads-freed"] if values["grads_freed"] else [])


@pytest.mark.parametrize("key", sorted(FACTS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_cli_framework_equals_the_explicit_flags(capsys, key):
    named = cli_json(capsys, "--framework", key[0], "--precision", key[1])
    typed = cli_json(capsys, *explicit_flags(expected(key)))
    assert named["total_gb"] == typed["total_gb"]
    assert named["stages"] == typed["stages"]
    assert named["framework"].startswith(f"{key[0]} at {key[1]}")


def test_cli_states_the_assumed_default(capsys):
    code, out, _ = cli(capsys, "memory", "--model", MODEL)
    assert code == 0
    assert "framework: megatron at amp" in out and "the default" in out
    assert cli_json(capsys)["total_gb"] == cli_json(capsys, "--framework", "megatron", "--precision", "amp")["total_gb"]


def test_cli_overrides_win(capsys):
    base = expected(("transformers", "amp"))
    # a byte flag
    over = cli_json(capsys, "--framework", "transformers", "--bytes-weights", "2")
    assert over["inputs"]["bytes_weights"] == 2
    assert over["total_gb"] == cli_json(capsys, *explicit_flags({**base, "bytes_weights": 2}))["total_gb"]
    assert "overridden by --bytes-weights" in over["framework"]
    # --recipe (megatron 2 + 4 + 12) over the framework's bytes; its other facts stay
    rec = cli_json(capsys, "--framework", "transformers", "--recipe", "megatron")
    assert (rec["inputs"]["bytes_weights"], rec["inputs"]["bytes_grads"], rec["inputs"]["bytes_optimizer"]) == (2, 4, 12)
    assert rec["inputs"]["logits_buffer_bytes"] == HF_LOSS
    # --no-grads-freed over transformers' freed gradients, --grads-freed over Megatron's kept ones
    assert cli_json(capsys, "--framework", "transformers", "--no-grads-freed")["inputs"]["grads_freed"] is False
    assert cli_json(capsys, "--framework", "megatron", "--grads-freed")["inputs"]["grads_freed"] is True
    assert cli_json(capsys, "--framework", "transformers", "--grads-freed", "false")["inputs"]["grads_freed"] is False
    code, _, err = cli(capsys, *BASE, "--grads-freed", "maybe")
    assert code != 0 and "grads_freed" in err


def test_cli_bad_names_are_refused_with_the_known_ones(capsys):
    code, out, err = cli(capsys, *BASE, "--framework", "nemo2", "--precision", "fp9")
    assert code != 0 and not out and "Traceback" not in err
    assert "framework = 'nemo2'" in err and "precision = 'fp9'" in err  # both at once
    for name in (*FRAMEWORKS, *PRECISIONS):
        assert name in err
    code, _, err = cli(capsys, *BASE, "--framework", "megatron", "--precision", "bf16")
    assert code != 0 and "precision = 'bf16'" in err and "amp, fp32" in err and "megatron" in err


# --- the worksheet function ----------------------------------------------------------------------------------------

def udf_module():
    require(importlib.util.find_spec("xlwings"), "xlwings is not installed: the worksheet functions cannot be imported")
    if str(ROOT / "udfs") not in sys.path:
        sys.path.insert(0, str(ROOT / "udfs"))
    return importlib.import_module("xlcalc_udfs")


def udf_args():
    m = catalog.get_model(MODEL)
    # params_b, layers, hidden, heads, kv_heads, ffn_hidden, vocab, seq_len, micro_batch, tp, pp, cp, dp, zero_stage,
    # seq_parallel, recompute, gated_ffn: the rest left empty
    return [m.params_b, m.layers, m.hidden, m.heads, m.kv, m.ffn_hidden, m.vocab, 4096, 1, 1, 1, 1, 1, 0, False,
            "none", m.gated_ffn]


@pytest.mark.parametrize("key", sorted(FACTS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_udf_equals_the_cli(capsys, key):
    udfs = udf_module()
    gb = udfs.MEM_PER_GPU_GB(*udf_args(), framework=key[0], precision=key[1])
    assert gb == pytest.approx(cli_json(capsys, "--framework", key[0], "--precision", key[1])["total_gb"], rel=1e-9)


def test_udf_default_and_overrides(capsys):
    udfs = udf_module()
    assert udfs.MEM_PER_GPU_GB(*udf_args()) == pytest.approx(cli_json(capsys)["total_gb"], rel=1e-9)
    # an argument given wins over the framework; an empty cell takes the framework's value
    over = udfs.MEM_PER_GPU_GB(*udf_args(), bytes_weights=2, grads_freed=False, framework="transformers")
    typed = cli_json(capsys, *explicit_flags({**expected(("transformers", "amp")), "bytes_weights": 2,
                                              "grads_freed": False}))
    assert over == pytest.approx(typed["total_gb"], rel=1e-9)
    empty = udfs.MEM_PER_GPU_GB(*udf_args(), bytes_weights="", framework="transformers")
    assert empty == pytest.approx(udfs.MEM_PER_GPU_GB(*udf_args(), framework="transformers"), rel=1e-12)


def test_udf_bad_names():
    udfs = udf_module()
    with pytest.raises(InputError) as e:
        udfs.MEM_PER_GPU_GB(*udf_args(), framework="nemo2", precision="fp9")
    assert set(e.value.names) == {"framework", "precision"}
    assert all(name in str(e.value) for name in FRAMEWORKS)
    args = udf_args()
    args[9] = 0  # tp: every input not allowed is named at once, the framework among them
    with pytest.raises(InputError) as e:
        udfs.MEM_PER_GPU_GB(*args, framework="nemo2")
    assert set(e.value.names) == {"framework", "tp"}
    with pytest.raises(InputError) as e:  # both names known, the pair not: the known precisions of the framework
        udfs.MEM_PER_GPU_GB(*udf_args(), framework="megatron", precision="bf16")
    assert e.value.names == ["precision"] and "amp, fp32" in str(e.value)
    # a framework per row: each row its own defaults, a bad one its own message
    rows = udfs.MEM_PER_GPU_GB(*udf_args(), framework=[["transformers"], ["megatron"], ["nemo2"]])
    assert rows[0][0] == pytest.approx(udfs.MEM_PER_GPU_GB(*udf_args(), framework="transformers"), rel=1e-12)
    assert rows[1][0] == pytest.approx(udfs.MEM_PER_GPU_GB(*udf_args()), rel=1e-12)
    assert rows[2][0].startswith("#VALUE! row 3") and "framework = 'nemo2'" in rows[2][0]


def test_framework_table_in_the_doc_is_regenerated():
    import subprocess

    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_framework_docs.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_estimate_framework_equals_the_explicit_flags(capsys):
    argv = ("estimate", "--model", MODEL, "--gpu", "h100-sxm", "--json")
    for key in (("transformers", "amp"), ("torchtune", "bf16"), ("deepspeed", "amp")):
        code, out, err = cli(capsys, *argv, "--framework", key[0], "--precision", key[1])
        assert code == 0, err
        named = json.loads(out)
        v = expected(key)
        typed_argv = [*argv, "--grads-freed", "true" if v["grads_freed"] else "false"]
        for f, flag in FLAGS.items():
            typed_argv += [flag, f"{v[f]:g}"]
        code, out, err = cli(capsys, *typed_argv)
        assert code == 0, err
        typed = json.loads(out)
        assert named["memory"]["total_gb"] == typed["memory"]["total_gb"]
        assert named["framework"].startswith(f"{key[0]} at {key[1]}")
    code, _, err = cli(capsys, *argv, "--framework", "nemo2")
    assert code != 0 and "framework = 'nemo2'" in err and "megatron" in err


# --- the names users know a framework by ----------------------------------------------------------------------------
# (name as a user types it, the framework it means), typed here from each software's docs: NeMo and Megatron-LM train
# with Megatron-Core; the Hugging Face Trainer and Accelerate run transformers' models under torch.autocast
# (accelerate/accelerator.py prepare_model); torchtitan's plain FSDP2 is the fsdp-eager stack's; Composer is the
# trainer llm-foundry runs
KNOWN_AS = [("hf-trainer", "transformers"), ("HF Trainer", "transformers"), ("accelerate", "transformers"),
            ("nemo", "megatron"), ("Megatron-LM", "megatron"), ("mcore", "megatron"), ("fsdp2", "torchtitan"),
            ("pytorch_fsdp", "torchtitan"), ("composer", "llm-foundry")]


@pytest.mark.parametrize("name,framework", KNOWN_AS, ids=[n for n, _ in KNOWN_AS])
def test_a_name_users_know_answers_as_its_framework(capsys, name, framework):
    by_name, by_id = cli_json(capsys, "--framework", name), cli_json(capsys, "--framework", framework)
    assert by_name["total_gb"] == by_id["total_gb"]
    assert by_name["framework"].startswith(f"{framework} (as {name}) at ")
    assert Scenario(model=MODEL, gpu="h100", framework=name).framework == framework
    udfs = udf_module()
    assert udfs.MEM_PER_GPU_GB(*udf_args(), framework=name) == pytest.approx(by_id["total_gb"], rel=1e-12)


def test_the_memory_and_the_planner_read_one_table_of_names():
    # every stack name the planner knows that holds a framework's memory means the same framework to the memory faces
    from xlcalc.planner.stacks import ALIASES, STACKS, stack_framework

    held = {n: stack_framework(n) for n in (*ALIASES, *STACKS) if stack_framework(n) is not None}
    assert {n: FRAMEWORK_ALIASES.get(n, n) for n in held} == held
    assert set(FRAMEWORK_ALIASES) <= set(held)


def test_an_unknown_name_lists_the_names_users_know(capsys):
    code, _, err = cli(capsys, *BASE, "--framework", "hf-trainr")
    assert code != 0 and "framework = 'hf-trainr'" in err and "hf-trainer (transformers)" in err


# PyTorch Lightning's precision names (Trainer(precision=...), NeMo's trainer.precision), typed here from its docs
# (N-Bit Precision) and NeMo's (Mixed Precision Training, Precision Modes): "bf16-mixed" keeps fp32 weights and
# computes in bf16, "bf16-true" holds the model in bf16, "32-true" in fp32
LIGHTNING = [("bf16-mixed", "amp"), ("BF16-True", "bf16"), ("32_true", "fp32")]


@pytest.mark.parametrize("name,precision", LIGHTNING, ids=[n for n, _ in LIGHTNING])
def test_a_precision_as_lightning_names_it(capsys, name, precision):
    by_name = cli_json(capsys, "--framework", "transformers", "--precision", name)
    by_id = cli_json(capsys, "--framework", "transformers", "--precision", precision)
    assert by_name["total_gb"] == by_id["total_gb"]
    assert f"at {precision} (as {name}) (" in by_name["framework"]
    assert Scenario(model=MODEL, gpu="h100", framework="transformers", precision=name).precision == precision
    udfs = udf_module()
    assert udfs.MEM_PER_GPU_GB(*udf_args(), framework="transformers", precision=name) == \
        pytest.approx(by_id["total_gb"], rel=1e-12)


def test_pytorch_alone_is_refused_with_how_to_name_what_you_run(capsys):
    # PyTorch is under the fsdp-eager, fsdp-compiled and transformers answers alike, which hold different memory
    assert profile_values("torchtitan") != profile_values("transformers")
    code, out, err = cli(capsys, *BASE, "--framework", "PyTorch")
    assert code != 0 and not out and "Traceback" not in err
    assert "framework = 'PyTorch' is not allowed" in err and "name how you train" in err and "hf-trainer" in err
