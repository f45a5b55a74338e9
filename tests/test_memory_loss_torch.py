"""Bytes per logit the loss holds at its peak, measured with PyTorch on CPU.

scripts/memory_validation_records.py reads each record's loss as its stack runs it (``LOSS_BYTES``): PyTorch eager
cross-entropy on upcast bf16 logits, the same under torch.compile, torchtune's chunked loss eager and compiled;
xlcalc/frameworks.py gives torchtune's loss today, LinearCrossEntropyLoss (the output layer and the loss one chunk at
a time), eager and compiled.
Those constants are counted tensor by tensor (the comment in scripts/memory_validation_records.py); here one
child process runs, mode after mode,
the loss's forward and backward on bf16 logits of 4096 tokens x 32768 classes after the gradients already exist, and the rise of its
resident memory peak (VmHWM, reset through /proc/self/clear_refs; tensors this large are mmap-ed and returned
when freed) divided by the logits is compared with the count. Needs torch (the 'torch' extra) and Linux; skipped
without them (and the compiled cases without a C++ compiler), except under CI=true, where it fails.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from procs import run_bounded
from requires import require, require_module
from xlcalc.frameworks import FRAMEWORKS, profile_values

torch = require_module("torch", "torch is not installed: pip install torch==2.13.0 (the 'torch' extra)")

require(Path("/proc/self/clear_refs").exists(), "no /proc/self/clear_refs: the loss measurement needs Linux's resident-peak reset",
        module_level=True)

COMPILER = shutil.which("g++") or shutil.which("c++")

ROOT = Path(__file__).resolve().parent.parent

CHILD = textwrap.dedent('''
    import gc, sys
    import torch
    import torch.nn.functional as F
    # D, the output layer's input width, enters no count: a narrow one, and the weight stored as (D, V) (the same
    # logits h @ W), keep the bf16 matmuls, slow on a CPU without bf16 instructions, from dominating the run
    T, V, D, K = 4096, 32768, 8, 8

    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) * 1024

    def ce(logits, labels):                       # torchtitan's cross_entropy_loss, torchtune's per chunk
        return F.cross_entropy(logits.float(), labels, reduction="sum")

    def inputs(tokens):
        torch.manual_seed(0)
        return (torch.randn(tokens, D, dtype=torch.bfloat16, requires_grad=True),
                torch.randn(D, V, dtype=torch.bfloat16, requires_grad=True), torch.randint(0, V, (tokens,)))

    for mode in sys.argv[1:]:                     # every mode in one process: one start, one compiler pool
        compiled = mode.endswith("compiled")
        # eager, the warm-up only loads the kernels: it runs them on T / 16 tokens (the measured step's rise is its
        # own buffers, the gradients existing); compiled, it compiles for the measured shapes: on all T tokens
        h, W, labels = inputs(T if compiled else T // 16)
        torch._dynamo.reset()                     # each compiled mode compiles afresh, as in its own process
        fn = torch.compile(ce) if compiled else ce

        def linear_ce(hc, t):                     # torchtune LinearCrossEntropyLoss.compute_cross_entropy
            return F.cross_entropy((hc @ W).float(), t, reduction="sum")

        # LinearCrossEntropyLoss.apply_compile_strategy compiles compute_cross_entropy, the chunk's projection with it
        lin = torch.compile(linear_ce) if compiled else linear_ce

        def step():
            if mode.startswith("linear"):         # torchtune LinearCrossEntropyLoss: projection + loss per chunk,
                loss = sum(lin(hc, t) for hc, t in zip(h.tensor_split(K), labels.tensor_split(K)))  # no logits kept
                loss.backward()
                return
            if mode.startswith("chunked"):        # torchtune CEWithChunkedOutputLoss: the output layer per chunk
                logits = [hc @ W for hc in h.tensor_split(K)]
                loss = sum(fn(c, t) for c, t in zip(logits, labels.tensor_split(K)))
            else:
                logits = h @ W
                loss = fn(logits, labels)
            del logits                            # both stacks delete the logits before the backward
            loss.backward()

        step()                                    # warm-up (compiles)
        if not compiled:                          # the measured step's inputs, all T tokens
            del h, W, labels
            gc.collect()
            h, W, labels = inputs(T)
            h.grad, W.grad = torch.ones_like(h), torch.ones_like(W)
        W.grad.zero_(); h.grad.zero_(); gc.collect()  # the gradients exist: only the loss's buffers rise
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")                          # reset the resident peak (VmHWM) to the current size
        base = status("VmRSS:")
        step()
        print(mode, (status("VmHWM:") - base) / (T * V), flush=True)
        del h, W, labels, step
        gc.collect()
''')


def _records():
    """scripts/memory_validation_records.py, as scripts/make_memory_validation.py imports it."""
    spec = importlib.util.spec_from_file_location("make_memory_validation_loss", ROOT / "scripts" /
                                                  "make_memory_validation.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return sys.modules["scripts.memory_validation_records"]


@pytest.fixture(scope="module")
def measured() -> dict[str, float]:
    """Bytes per logit of every mode, measured in one child process (one torch start, one compiler pool);
    torch.compile's kernels are cached under .cache/torchinductor, so a second run skips the C++ builds."""
    modes = [m for m, _, _ in CASES if COMPILER or not m.endswith("compiled")]
    # glibc's mmap threshold rises after a large block is freed (up to 32 MiB, one chunk's gradient here), so a
    # later block of that size can come from heap pages already resident and the peak would miss it; a fixed
    # threshold gives every block of 64 KiB or more its own mapping, returned to the system when freed.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "65536",
           "TORCHINDUCTOR_CACHE_DIR": str(ROOT / ".cache" / "torchinductor")}
    out = run_bounded([sys.executable, "-c", CHILD, *modes], cpu_s=1200, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    return {line.split()[0]: float(line.split()[1]) for line in out.stdout.strip().splitlines() if line.split()[0] in modes}


# (mode, the script's LOSS_BYTES key or the framework profile that holds it, the count by hand)
CASES = [
    ("plain", ("plain", False), 4 + 4 + 4),        # backward: log-softmax output, its gradient, the input gradient
    ("plain-compiled", ("plain", True), 2 + 2),    # the bf16 logits saved, the bf16 gradient
    ("chunked", ("chunked", False), 2 + 4 + 4 / 8),  # all bf16 chunks + fp32 log-softmax outputs + one fp32 copy
    ("chunked-compiled", ("chunked", True), 2 + 2 / 8),
    # torchtune LinearCrossEntropyLoss, K = 8: every chunk's fp32 log-softmax output saved (4), and in the first
    # chunk's backward its gradient and the input's gradient (4 / K + 4 / K); the bf16 logits are not kept
    ("linear", ("torchtune", "bf16"), 4 + 8 / 8),
    # compiled (apply_compile_strategy: the chunk's projection and loss in one graph): the bf16 logits of every chunk
    # saved (2); the chunk's gradient reuses its saved logits' buffer (AOTAutograd's donated buffers). The
    # projection's weight-gradient temporaries (V x D, not per logit) come on top: about 0.09 of a logit here
    ("linear-compiled", ("torchtune-compile", "bf16"), 2),
]


@pytest.mark.parametrize("mode,key,count", CASES, ids=[c[0] for c in CASES])
def test_loss_bytes_per_logit(mode, key, count, measured):
    if mode.endswith("compiled"):
        require(COMPILER, "no C++ compiler (g++) for torch.compile's CPU backend")
    if key[0] in FRAMEWORKS:
        assert profile_values(*key)["logits_buffer_bytes"] == pytest.approx(count)
    else:
        assert _records().LOSS_BYTES[key] == pytest.approx(count)
    assert measured[mode] == pytest.approx(count, rel=0.05), f"{mode}: measured {measured[mode]:.2f} bytes per logit"
