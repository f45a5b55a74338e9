"""The stage memory model compiled into plain Python (xlcalc/stage_memory_code.py) is what its steps give.

The module is generated from the steps by scripts/make_memory_code.py (through xlcalc.engine.compiled); the planner's
search runs it. The reference is the step-by-step evaluation (each step's registered formula called in turn,
``stage_memory.evaluate(compiled=False)``): both must give every step the same number, on configurations drawn
across the model's inputs (dense and MoE, ZeRO 0-3, PP with uneven stages, CP, interleaving, recomputation, FP8
copies, offload, LoRA and QLoRA, with and without a capacity).
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from xlcalc import stage_memory as sm
from xlcalc.engine import python_expr
from xlcalc.errors import InputError
from xlcalc.expr.nodes import BinOp, Func, Num, Text, Var, wrap

ROOT = Path(__file__).resolve().parent.parent


def test_generated_module_is_up_to_date():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_memory_code.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout


def _configurations(n: int, seed: int):
    rng = random.Random(seed)
    for _ in range(n):
        layers = rng.choice([24, 32, 40, 61, 80, 126])
        heads = rng.choice([16, 32, 64, 128])
        hidden = heads * rng.choice([64, 128])
        pp = rng.choice([1, 2, 4, 8])
        v = dict(params_b=rng.uniform(1, 700), layers=layers, hidden=hidden, heads=heads,
                 kv_heads=rng.choice([heads, 8]) if heads % 8 == 0 else heads, ffn_hidden=hidden * rng.choice([2, 4]),
                 vocab=rng.choice([32000, 128256]), seq_len=rng.choice([2048, 4096, 8192]),
                 micro_batch=rng.choice([1, 2, 4]), tp=rng.choice([1, 2, 4, 8]), pp=pp, cp=rng.choice([1, 2]),
                 dp=rng.choice([1, 2, 8, 64]), zero_stage=rng.choice([0, 1, 2, 3]), seq_parallel=rng.random() < .5,
                 recompute=rng.choice(["none", "selective", "full", "op_selective"]),
                 microbatches=rng.choice([1, 8, 32]), virtual_stages=rng.choice([1, 2]), gated_ffn=rng.random() < .5,
                 optimizer_offload=rng.random() < .2, grads_freed=rng.random() < .3, bytes_fp8=rng.choice([0, 1]),
                 job=rng.choice(["full", "full", "lora", "qlora"]), lora_rank=rng.choice([8, 64]),
                 lora_targets=rng.choice(["qv", "qkv", "attention", "all"]),
                 flash_attention=rng.random() < .7, tied_embeddings=rng.random() < .3)
        if pp > 1 and layers % pp and rng.random() < .7:
            base = layers // pp
            v.update(first_stage_layers=base, last_stage_layers=layers - base * (pp - 1))
        if rng.random() < .3:
            v.update(expert_params_b=v["params_b"] * 0.8, experts=64, ep=rng.choice([1, 2, 8]))
        if rng.random() < .5:
            v["memory_gb"] = rng.choice([40, 80, 192])
        yield v


@pytest.mark.parametrize("seed", [1, 2])
def test_compiled_model_gives_every_step_of_the_step_by_step_model(seed):
    compared = 0
    variants = set()
    for v in _configurations(1500, seed):
        try:
            clean = sm.resolve(v)
        except (InputError, TypeError, ValueError):
            continue  # a layout the model refuses (not whole): both paths share resolve()
        try:
            ref = sm.evaluate(clean, validated=True)
        except ZeroDivisionError:
            continue
        fast = sm.evaluate(clean, validated=True, compiled=True)
        assert fast.keys() == ref.keys()
        for k, x in ref.items():
            y = fast[k]
            assert x == y or (isinstance(x, float) and math.isclose(x, y, rel_tol=1e-12)), (v, k, x, y)
        compared += 1
        variants.add(("memory_gb" in clean, bool(clean.get("expert_params_b")), clean["job"]))
    assert compared > 500
    assert len(variants) == 12  # dense/MoE x with/without capacity x full/LoRA/QLoRA


@pytest.mark.parametrize("e, env, expected", [
    # Excel's ROUND is half away from zero (Python's round() is half to even): ROUND(2.5, 0) = 3, ROUND(-2.5, 0) = -3
    (Func("ROUND", (Var("x"), Num(0))), {"x": 2.5}, 3),
    (Func("ROUND", (Var("x"), Num(0))), {"x": -2.5}, -3),
    # text compares case-insensitively, as in a spreadsheet: "Full" = "full" is TRUE
    (BinOp("=", Var("x"), Text("full")), {"x": "Full"}, True),
    (BinOp("<>", Var("x"), Text("full")), {"x": "FULL"}, False),
    (BinOp("=", Var("x"), Var("y")), {"x": "Qv", "y": "qV"}, True),
    (BinOp("=", Var("x"), Num(1)), {"x": 1}, True),
    # IF takes one branch only: the other one would divide by zero
    (Func("IF", (BinOp("=", Var("x"), Num(0)), Num(7), BinOp("/", Num(1), Var("x")))), {"x": 0}, 7),
    # CEILING(ROUND(x, 9), 1) tolerates float noise: 864*1.05/8 = 113.40000000000001 -> 114, 3.0000000001 -> 3
    (Func("CEILING", (Func("ROUND", (Var("x"), Num(9))), Num(1))), {"x": 3.0000000001}, 3),
    (BinOp("&", Var("x"), Text(" GB")), {"x": 80.0}, "80 GB"),
    (BinOp("^", Var("x"), Num(2)), {"x": 3}, 9),
    (Func("MAX", (Var("x"), Num(2), wrap(-1))), {"x": 1}, 2),
])
def test_python_text_of_an_expression_computes_as_a_spreadsheet(e, env, expected):
    src = python_expr(e, lambda n: f"env[{n!r}]")
    ns = {"env": env, **vars(sys.modules["xlcalc.stage_memory_code"])}
    assert eval(src, ns) == expected  # noqa: S307 - the text is generated from our own expression tree
    if not (isinstance(e, Func) and e.name == "IF"):
        assert e.evaluate(env) == expected  # the expression's own evaluation agrees
