"""The planner's fast path gives the plans of its reference path, computed in the same process.

The search memoises the memory model's steps across its configurations (``xlcalc.planner.search.MEMOISE``); with
the memo off every step of every configuration is computed from its inputs. Both answers must be the same, plan
for plan (labels, MFU, memory, every part), and so must the configurations counted and rejected.
"""

import importlib

import pytest

from xlcalc.planner import Settings, plan

search_module = importlib.import_module("xlcalc.planner.search")  # the module (the package exports search())

CASES = {
    "70B on 1,024 H100": dict(model="llama2-70b", gpu="h100", n_gpus=1024, seq_len=4096,
                              global_batch_tokens=4 * 2**20, tokens_t=2, settings=Settings(scaleout_gb_s=50)),
    "405B on 16,384 H100": dict(model="llama3.1-405b", gpu="h100", n_gpus=16384, seq_len=8192,
                                global_batch_tokens=16 * 2**20, tokens_t=15.6, settings=Settings(scaleout_gb_s=50)),
    "DeepSeek-V3 FP8 on 2,048 H800": dict(model="deepseek-v3", gpu="h800", n_gpus=2048, seq_len=4096,
                                          global_batch_tokens=15360 * 4096, tokens_t=14.8, fp8=True),
    "7B on 1 H200": dict(model="llama2-7b", gpu="h200", n_gpus=1, seq_len=2048, global_batch_tokens=2**20, tokens_t=1),
    "seed 002: 70B on 1,024 A800": dict(model="llama2-70b", gpu="a800", n_gpus=1024, seq_len=4096,
                                        global_batch_tokens=4 * 2**20, tokens_t=2),
}


@pytest.mark.parametrize("name", CASES)
def test_memoised_search_gives_the_reference_plans(name, monkeypatch):
    kw = dict(CASES[name])
    fast = plan(kw.pop("model"), **kw)
    monkeypatch.setattr(search_module, "COMPILED", False)
    kw = dict(CASES[name])
    slow = plan(kw.pop("model"), **kw)
    assert fast.plans, f"{name}: no plan"
    assert [p.label() for p in fast.plans] == [p.label() for p in slow.plans]
    assert [(p.mfu, p.memory_gb, p.step_s) for p in fast.plans] == [(p.mfu, p.memory_gb, p.step_s) for p in slow.plans]
    assert fast.model_dump() == slow.model_dump()  # every part, the rejections and their counts too
