"""The step time of one layout as a chain of registered formulas, like the memory model's :func:`memory_steps`.

:func:`step_time_steps` lists named steps, each *one registered formula* of :mod:`xlcalc.formulas.microbatch`,
:mod:`xlcalc.formulas.steptime` or :mod:`xlcalc.formulas.communication` applied to expressions over input names
and earlier steps: the matmul, attention and elementwise time of one layer and of the logit layer, the exposed
tensor-, context- and pipeline-parallel communication of a micro-batch, the micro-batch, the data-parallel
communication and the optimizer step, the step time, MFU, HFU and throughput. :func:`evaluate` runs the chain
with numbers; written over defined names it is a sheet of live formulas. The planner's search
(:mod:`xlcalc.planner.steptime`) computes the same terms from the same formulas, and
``tests/test_step_steps.py`` checks that both give one step time for every layout the chain covers.

The chain covers a dense model (no experts) with even middle pipeline stages (the first and the last may differ), bf16 linear layers (no FP8), the optimizer
on the GPU and every streaming multiprocessor computing (:data:`NOT_COVERED` names the rest); the planner's search
covers those too. Inputs are input-spec names (:mod:`xlcalc.inputs`); the global batch is ``microbatches`` x
``micro_batch`` x ``dp`` sequences of ``seq_len`` tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import registry
from .errors import InputError
from .expr.functions import if_, max_
from .expr.nodes import Expr, Var, wrap
from .formulas import communication as fc
from .formulas import microbatch as fmb
from .formulas import steptime as fs
from .inputs import spec
from .layout import stage_layer_counts
from .registry import Formula
from .stage_memory import Step, sources

__all__ = ["STEP_INPUTS", "NOT_COVERED", "step_time_steps", "evaluate"]

# Every input of the chain (input-spec names), each given: the planner resolves them from the catalog, the stack
# profile and the layout (xlcalc.planner.step_chain.step_chain_inputs)
STEP_INPUTS = (
    # the architecture
    "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "gated_ffn", "vocab", "layer_params",
    "embedding_params", "tied_embeddings",
    # the run and the layout
    "seq_len", "micro_batch", "microbatches", "tp", "pp", "dp", "cp", "zero_stage", "seq_parallel", "recompute",
    "virtual_stages", "first_stage_layers", "last_stage_layers",
    # the GPU and the cluster
    "peak_tflops", "matmul_efficiency", "sm_count", "wave_quantization", "hbm_tb_s", "scaleup_gb_s", "scaleout_gb_s",
    "nvlink_domain",
    # the software stack's facts
    "attention_efficiency", "attention_factor", "attention_kernel_speed", "flash_attention", "elementwise_factor",
    "loss_bytes", "dropout", "link_efficiency", "tp_overlap", "pp_overlap", "cp_overlap", "dp_overlap", "grad_bytes",
    "bytes_weights", "bytes_per_param_step",
)

# What the chain leaves out (the planner's search alone prices them), by the planner's name
NOT_COVERED = {
    "experts": "a mixture of experts (expert parallelism, token permutation)",
    "fp8": "FP8 linear layers",
    "offload": "an optimizer offloaded to the CPU",
    "stage_layers": "uneven middle pipeline stages (only the first and the last may differ)",
    "comm_sms": "SMs kept by communication kernels",
    "projection": "attention projections of their own shape (MLA)",
}


def step_time_steps(src: Mapping[str, Any] | None = None) -> tuple[Step, ...]:
    """The chain's steps over ``src`` (input-spec name -> expression; default: each input's defined name)."""
    s = sources(STEP_INPUTS, src)
    steps: list[Step] = []

    def add(name: str, formula: Formula, label: str, **args: Any) -> Var:
        # every parameter explicit (the defaults too): a sheet writes a step from its arguments alone
        args = {**formula.defaults, **args}
        steps.append(Step(name, formula, {k: wrap(v) for k, v in args.items()}, label, guarded=False))
        return Var(name)

    def named(*keys: str) -> dict[str, Any]:  # inputs passed on under their own names
        return {k: s[k] for k in keys}

    # layers of the first, a middle and the last stage: L/p each, or the end stages given and the rest shared evenly
    first, middle, last = stage_layer_counts(s)
    tokens_mb = s["seq_len"] * s["micro_batch"] / s["cp"]  # one GPU's tokens of a micro-batch
    shape = named("hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab", "gated_ffn")
    gpu_mm = named("peak_tflops", "matmul_efficiency", "sm_count", "wave_quantization", "tp", "recompute")
    # --- compute of one micro-batch: one layer, and the logit layer ----------------------------------------------
    mm_layer_logits = add("Step_Matmul_1L_S", fmb.stage_matmul_time_s,
                          "Matmul time of one layer and the logit layer, one micro-batch (s)",
                          layers_per_stage=1, tokens=tokens_mb, **shape, **gpu_mm)
    mm_logits = add("Step_Logits_Matmul_S", fmb.stage_matmul_time_s, "Matmul time of the logit layer (s)",
                    layers_per_stage=0, tokens=tokens_mb, **shape, **gpu_mm)
    attention = add("Step_Layer_Attention_S", fmb.layer_attention_time_s, "Attention core of one layer (s)",
                    tokens=tokens_mb, **named("seq_len", "heads", "head_dim", "peak_tflops", "matmul_efficiency",
                                              "attention_efficiency", "hbm_tb_s", "flash_attention", "tp", "recompute",
                                              "attention_factor", "attention_kernel_speed"))
    elementwise = dict(tokens=tokens_mb, **named("hidden", "ffn_hidden", "hbm_tb_s", "gated_ffn", "tp", "seq_parallel",
                                                 "recompute", "elementwise_factor", "dropout"))
    ew_layer = add("Step_Layer_Elementwise_S", fs.elementwise_time_s,
                   "Norms, residuals, dropout and activation of one layer (s)",
                   layers_per_stage=1, vocab=0, **elementwise)
    ew_logits = add("Step_Loss_S", fs.elementwise_time_s, "The loss over the logits (s)",
                    layers_per_stage=0, vocab=s["vocab"], loss_bytes=s["loss_bytes"], **elementwise)
    layer_s = mm_layer_logits - mm_logits + attention + ew_layer
    logits_s = mm_logits + ew_logits
    layers_stage = add("Step_Slowest_Stage_Layers", fmb.slowest_stage_layers, "Layers of the slowest pipeline stage",
                       last_layers=last, other_layers=max_(first, middle), layer_s=layer_s, logits_s=logits_s,
                       pp=s["pp"])
    # --- communication on a micro-batch's path ------------------------------------------------------------------
    link = dict(link_efficiency=s["link_efficiency"])
    tp_comm = add("Step_TP_Comm_S", fc.tp_comm_time_s, "Exposed TP communication of the stage, one micro-batch (s)",
                  layers_per_stage=layers_stage, seq_len=s["seq_len"] / s["cp"],
                  **named("micro_batch", "hidden", "tp", "scaleup_gb_s", "recompute", "tp_overlap"), **link)
    fabric = dict(gpus_per_node=s["nvlink_domain"], scaleup_gb_s=s["scaleup_gb_s"], scaleout_gb_s=s["scaleout_gb_s"])
    cp_bw = add("Step_CP_Bandwidth_GB_s", fc.group_bandwidth_gb_s, "Bandwidth of the CP ring (GB/s)",
                span_gpus=s["tp"] * s["cp"], **fabric)
    cp_comm = add("Step_CP_Comm_S", fc.cp_comm_time_s, "Exposed CP communication of the stage, one micro-batch (s)",
                  layers_per_stage=layers_stage, tokens=s["seq_len"] * s["micro_batch"],
                  **named("kv_heads", "head_dim", "cp"), bandwidth_gb_s=cp_bw, window_s=layers_stage * attention,
                  **named("tp", "cp_overlap"), **link)
    pp_bw = add("Step_PP_Bandwidth_GB_s", fc.group_bandwidth_gb_s, "Bandwidth between pipeline stages (GB/s)",
                span_gpus=s["tp"] * s["cp"] * s["dp"] * s["pp"], **fabric)
    p2p = add("Step_PP_P2P_S", fc.pipeline_p2p_time_s, "Pipeline send and receive of one micro-batch (s)",
              tokens=tokens_mb, hidden=s["hidden"], bandwidth_gb_s=pp_bw, tp=s["tp"],
              virtual_stages=s["virtual_stages"], **link)
    microbatch = add("Step_Microbatch_S", fmb.microbatch_time_s, "One micro-batch on the slowest stage (s)",
                     layers_per_stage=layers_stage, layer_matmul_s=mm_layer_logits - mm_logits,
                     layer_attention_s=attention, layer_elementwise_s=ew_layer,
                     logits_s=if_(layers_stage > last, 0, logits_s),  # the last stage runs the logit layer
                     tp_comm_s=tp_comm, cp_comm_s=cp_comm,
                     pp_comm_s=if_(s["pp"] > 1, p2p * (1 - s["pp_overlap"]), 0))
    # --- once per step: data-parallel communication, the optimizer, the bubble ---------------------------------
    stage_params = add("Step_Stage_Params", fs.pipeline_stage_params, "Parameters of the heaviest stage",
                       **named("layers", "pp", "layer_params", "embedding_params", "tied_embeddings"))
    dp_ranks = s["dp"] * s["cp"]  # gradients are reduced over the DP x CP ranks, TP apart
    in_domain = add("Step_DP_Ranks_per_Domain", fc.ranks_per_domain, "DP ranks inside one NVLink domain",
                    ranks=dp_ranks, stride_gpus=s["tp"], nvlink_domain=s["nvlink_domain"])
    dp_comm = add("Step_DP_Comm_S", fc.dp_comm_time_hierarchical_s, "Exposed DP communication of the step (s)",
                  params_per_gpu=stage_params / s["tp"], dp=dp_ranks, ranks_per_domain=in_domain,
                  microbatch_s=microbatch, **named("scaleup_gb_s", "scaleout_gb_s", "zero_stage", "microbatches",
                                                   "grad_bytes", "bytes_weights"), overlap_frac=s["dp_overlap"], **link)
    optimizer = add("Step_Optimizer_S", fs.optimizer_step_s, "Optimizer step (s)",
                    params_per_gpu_b=stage_params / s["tp"] / 1e9,
                    **named("hbm_tb_s", "zero_stage", "dp", "bytes_per_param_step"))
    add("Step_Bubble_S", fs.bubble_time_s, "Pipeline bubble of the step (s)",
        **named("pp", "microbatches"), microbatch_s=microbatch, virtual_stages=s["virtual_stages"])
    step = add("Step_Time_S", fs.step_time_s, "Step time (s)", microbatches=s["microbatches"],
               microbatch_s=microbatch, **named("pp", "virtual_stages"), comm_s=dp_comm, compute_s=optimizer)
    # --- what the step achieves ----------------------------------------------------------------------------------
    arch = named("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab", "seq_len", "gated_ffn")
    model_flops = add("Step_Model_FLOPs_per_Token", fs.model_flops_per_token, "Model FLOPs per token", **arch)
    hw_flops = add("Step_Hardware_FLOPs_per_Token", fs.hardware_flops_per_token,
                   "Hardware FLOPs per token (recomputation included)", recompute=s["recompute"], **arch)
    n_gpus = s["tp"] * s["cp"] * s["pp"] * s["dp"]
    tokens = s["microbatches"] * s["micro_batch"] * s["dp"] * s["seq_len"]
    run = dict(tokens=tokens, step_s=step, n_gpus=n_gpus)
    add("Step_MFU", fs.mfu_from_step, "MFU (model FLOPs / peak)", flops_per_token=model_flops,
        peak_tflops=s["peak_tflops"], **run)
    add("Step_HFU", fs.mfu_from_step, "HFU (hardware FLOPs / peak)", flops_per_token=hw_flops,
        peak_tflops=s["peak_tflops"], **run)
    add("Step_Tokens_per_S_per_GPU", fs.tokens_per_s_per_gpu, "Tokens per second per GPU", **run)
    return tuple(steps)


_CHAIN: list[tuple[str, Any, list[tuple[str, Expr]]]] = []


def evaluate(values: Mapping[str, Any]) -> dict[str, Any]:
    """Every step of the chain by name, for validated numbers by input-spec name (every one of :data:`STEP_INPUTS`).

    Raises :class:`xlcalc.errors.InputError` naming every missing input at once.
    """
    missing = [k for k in STEP_INPUTS if values.get(k) is None]
    if missing:
        raise InputError(", ".join(missing), None, "given (the step-time chain needs them)")
    if not _CHAIN:
        with registry.symbolic():
            _CHAIN.extend((st.name, st.formula.func, list(st.args.items())) for st in step_time_steps())
    env: dict[str, Any] = {spec(k).excel_name: values[k] for k in STEP_INPUTS}
    with registry.numeric():
        for name, func, args in _CHAIN:
            env[name] = func(**{k: e.evaluate(env) for k, e in args})
    return env
