"""Memory per GPU: model states under ZeRO/TP/PP, LoRA, activations (Korthikanti), totals, fit."""

from __future__ import annotations

from .. import layout
from ..expr.functions import and_, eq, floor_int, if_, max_, min_, not_, or_
from ..recipes import MEMORY_DEFAULTS as _D  # every input's default, declared once: the signatures read it
from ..recipes import default_bytes
from ..registry import REGISTRY, formula
from .activations import _check_layout  # (tp a divisor of heads)

_B = default_bytes()  # the default recipe's bytes per parameter


_ZERO_SOURCE = "Rajbhandari et al. 2019 (ZeRO) §5: stage 1 shards optimizer states, 2 also gradients, 3 also weights"
_AUTOCAST_SOURCE = ("PyTorch autocast (aten/src/ATen/autocast_mode.cpp, cached_cast): an fp32 leaf weight that requires "
                    "a gradient is cast once per autocast region and the 16-bit copy cached until the region exits; "
                    "the matmul's autograd node saves that copy for the input gradient, so it lives until the layer's "
                    "backward; a checkpointed layer casts again when it is recomputed. Measured with PyTorch's "
                    "MemTracker by scripts/torch_memory.py")


@formula(
    udf="MEM_WEIGHTS_GB", unit="GB per GPU", category="memory",
    equation="w * N/(tp*pp), / dp under ZeRO-3",
    source=_ZERO_SOURCE,
)
def mem_weights_gb(params_b, zero_stage=_D["zero_stage"], dp=_D["dp"], tp=_D["tp"], pp=_D["pp"], bytes_weights=_B["bytes_weights"]):
    """Weight memory per GPU, GB = 1e9 bytes."""
    return bytes_weights * params_b / (tp * pp) / if_(zero_stage >= 3, dp, 1)


@formula(
    udf="MEM_GRADS_GB", unit="GB per GPU", category="memory",
    equation="g * N/(tp*pp), / dp under ZeRO-2 and 3",
    source=_ZERO_SOURCE,
)
def mem_grads_gb(params_b, zero_stage=_D["zero_stage"], dp=_D["dp"], tp=_D["tp"], pp=_D["pp"], bytes_grads=_B["bytes_grads"]):
    """Gradient memory per GPU, GB."""
    return bytes_grads * params_b / (tp * pp) / if_(zero_stage >= 2, dp, 1)


@formula(
    udf="MEM_OPTIMIZER_GB", unit="GB per GPU", category="memory",
    equation="o * N/(tp*pp), / dp under ZeRO-1, 2 and 3",
    source=_ZERO_SOURCE,
)
def mem_optimizer_gb(params_b, zero_stage=_D["zero_stage"], dp=_D["dp"], tp=_D["tp"], pp=_D["pp"], bytes_optimizer=_B["bytes_optimizer"]):
    """Optimizer-state memory per GPU (fp32 master copy, Adam m and v), GB."""
    return bytes_optimizer * params_b / (tp * pp) / if_(zero_stage >= 1, dp, 1)


@formula(
    udf="MEM_STATIC_GB", unit="GB per GPU", category="memory",
    equation="Psi = N/(tp*pp); ZeRO 0: (w+g+o)Psi; 1: (w+g)Psi + o*Psi/dp; "
             "2: w*Psi + (g+o)Psi/dp; 3: (w+g+o)Psi/dp",
    source="Rajbhandari et al. 2019 (ZeRO) §5; seed 002 §7.1.2 (14P, 2P+12P/N, 14P/N)",
)
def mem_static_gb(params_b, zero_stage=_D["zero_stage"], dp=_D["dp"], tp=_D["tp"], pp=_D["pp"], bytes_weights=_B["bytes_weights"], bytes_grads=_B["bytes_grads"], bytes_optimizer=_B["bytes_optimizer"]):
    """Model-state memory per GPU (weights, gradients, optimizer states), GB = 1e9 bytes."""
    return (mem_weights_gb(params_b, zero_stage, dp, tp, pp, bytes_weights)
            + mem_grads_gb(params_b, zero_stage, dp, tp, pp, bytes_grads)
            + mem_optimizer_gb(params_b, zero_stage, dp, tp, pp, bytes_optimizer))


@formula(
    udf="MEM_ZERO3_BUFFER_GB", unit="GB per GPU", category="memory",
    equation="4 bytes * largest layer's parameters",
    source="DeepSpeed memory docs (estimate_zero3_model_states_mem_needs): largest_layer_memory = 4*largest_layer_params",
)
def mem_zero3_buffer_gb(largest_layer_params_b):
    """Working memory ZeRO-3 needs to gather the largest layer whole."""
    return 4 * largest_layer_params_b


@formula(
    udf="MEM_LORA_GB", unit="GB per GPU", category="memory",
    equation="w*P (frozen) + k*P' (trainable: weights, grads, optimizer)",
    source="seed 002 §7.1.2 (LoRA: 2P + 14P')",
)
def mem_lora_gb(params_b, trainable_params_b, bytes_weights=_B["bytes_weights"], bytes_trainable=14):
    """Model-state memory of LoRA fine-tuning: frozen weights plus full states of the adapters."""
    return bytes_weights * params_b + bytes_trainable * trainable_params_b


@formula(
    udf="ACT_LAYER_BYTES_GENERAL", unit="bytes per layer", category="memory",
    equation="s*b*[10h/(t if SP) + (4*a*dh + 4*kv*dh + (6 if gated else 4)*F)/t] + 5*a*s^2*b/t "
             "(s^2 term only without flash attention and recompute); full recompute: 2*s*b*h (/t with SP); "
             "op_selective: s*b*[2h/(t if SP) + (2*a*dh [Q] + 2*kv*dh [V] + 2*F [W1] + 2*a*dh + 4*a [attention out, "
             "log-sum-exp])/t + 2h if gated [W2]]",
    source="Korthikanti et al. 2022 Table 2 (34 = 10 + 24: Q,K 4h, V 2h, proj 2h, FFN 16h), generalised to GQA, any F, "
           "SwiGLU; op_selective: torchtitan's per-op policy saves SDPA outputs and every other mm output "
           "(mm 1, 3, 5, 7 of Q, K, V, O, W1, W3, W2)",
)
def act_layer_bytes_general(seq_len, micro_batch, hidden, heads, kv_heads, head_dim, ffn_hidden, gated_ffn=_D["gated_ffn"],
                            tp=_D["tp"], seq_parallel=_D["seq_parallel"], recompute=_D["recompute"], flash_attention=_D["flash_attention"]):
    """Activation bytes of one layer for GQA, any FFN size, gated FFN and FlashAttention.

    ``op_selective`` is PyTorch's per-op selective activation checkpointing with torchtitan's policy
    (``torchtitan/models/llama3/parallelize.py``, ``_save_list`` and ``_custom_policy``): the block's input
    is kept, and of the ops in ``_save_list`` (``aten.mm``, the SDPA kernels, reduce-scatter, ``max``) the
    outputs are saved except every second ``mm`` ("Saves output of all compute ops, except every second mm").
    A Llama block calls mm for Q, K, V, O, W1, W3, W2 in that order, so the outputs of Q (2*a*dh), V
    (2*kv*dh), W1 (2F) and, in a gated FFN, W2 (2h, the row-parallel output before its reduction) are saved,
    with the attention output (2*a*dh) and its fp32 log-sum-exp (4*a); per token, 16-bit activations.
    """
    sb = seq_len * micro_batch
    replicated = if_(seq_parallel, 10 * hidden / tp, 10 * hidden)
    split = (4 * heads * head_dim + 4 * kv_heads * head_dim + if_(gated_ffn, 6, 4) * ffn_hidden) / tp
    scores = if_(flash_attention, 0, 5 * heads * seq_len / tp)
    stored = sb * (replicated + split)
    full = if_(seq_parallel, 2 * sb * hidden / tp, 2 * sb * hidden)
    layer_input = if_(seq_parallel, 2 * hidden / tp, 2 * hidden)
    op_saved = sb * (layer_input + (2 * heads * head_dim + 2 * kv_heads * head_dim + 2 * ffn_hidden
                                    + 2 * heads * head_dim + 4 * heads) / tp + if_(gated_ffn, 2 * hidden, 0))
    return if_(eq(recompute, "full"), full, if_(eq(recompute, "selective"), stored,
                                                if_(eq(recompute, "op_selective"), op_saved, stored + sb * scores)))


@formula(
    udf="ACT_LAYER_BYTES", unit="bytes per layer", category="memory",
    equation="none: sbh(10 + 24/t + 5as/(ht)); +SP: sbh(34/t + 5as/(ht)); selective: sbh(10 + 24/t); "
             "selective+SP: 34sbh/t; full: 2sbh (/t with SP)",
    source="Korthikanti et al. 2022 (arXiv 2205.05198), Table 2: ACT_LAYER_BYTES_GENERAL with MHA, F = 4h, no flash",
    check=_check_layout,
)
def act_layer_bytes(seq_len, micro_batch, hidden, heads, tp=_D["tp"], seq_parallel=_D["seq_parallel"], recompute=_D["recompute"]):
    """Activation bytes of one transformer layer (16-bit activations, FFN = 4h, no FlashAttention)."""
    return act_layer_bytes_general(seq_len, micro_batch, hidden, heads, heads, hidden / heads, 4 * hidden, False,
                                   tp, seq_parallel, recompute, False)


@formula(
    udf="MEM_ACT_GB", unit="GB per GPU", category="memory",
    equation="L * per-layer bytes (Korthikanti Table 2) / 1e9; first pipeline stage of 1F1B holds L layers' worth",
    source="Korthikanti et al. 2022, Table 2 and §4.2.3",
    check=_check_layout,
)
def mem_act_gb(seq_len, micro_batch, hidden, layers, heads, tp=_D["tp"], seq_parallel=_D["seq_parallel"], recompute=_D["recompute"]):
    """Activation memory per GPU for all layers (the first stage of a 1F1B pipeline)."""
    return layers * act_layer_bytes(seq_len, micro_batch, hidden, heads, tp, seq_parallel, recompute) / 1e9


@formula(
    udf="ACT_INFLIGHT_FACTOR", unit="ratio", category="memory",
    equation="interleaved (v > 1): 1 + (p-1)/(p*v); with m < p: x m/p; plain 1F1B: 1",
    source="Korthikanti et al. 2022 §4.2.3",
)
def act_inflight_factor(pp, virtual_stages=_D["virtual_stages"], microbatches=_D["microbatches"]):
    """Multiplier on L layers' activations for the first pipeline stage's in-flight micro-batches."""
    interleave = if_(virtual_stages > 1, 1 + (pp - 1) / (pp * virtual_stages), 1)
    return interleave * if_(microbatches < pp, microbatches / pp, 1)


@formula(
    udf="MEM_ACT_PIPELINE_GB", unit="GB per GPU", category="memory",
    equation="MEM_ACT_GB x ACT_INFLIGHT_FACTOR(p, v, m)",
    source="Korthikanti et al. 2022 §4.2.3 (Fig. 1 uses p = 8, v = 3)",
    check=_check_layout,
)
def mem_act_pipeline_gb(seq_len, micro_batch, hidden, layers, heads, tp=_D["tp"], seq_parallel=_D["seq_parallel"], recompute=_D["recompute"],
                        pp=_D["pp"], virtual_stages=_D["virtual_stages"], microbatches=_D["microbatches"]):
    """Activation memory of the first pipeline stage, with the schedule's in-flight factor."""
    return (mem_act_gb(seq_len, micro_batch, hidden, layers, heads, tp, seq_parallel, recompute)
            * act_inflight_factor(pp, virtual_stages, microbatches))


@formula(
    udf="MEM_TOTAL_GB", unit="GB per GPU", category="memory",
    equation="total = model states + activations + overhead",
    source="seed 002 §7.1.3",
)
def mem_total_gb(static_gb, activations_gb, overhead_gb=_D["overhead_gb"]):
    """Peak memory per GPU."""
    return static_gb + activations_gb + overhead_gb


@formula(
    udf="FITS_IN_GPU", unit="TRUE/FALSE", category="memory", returns="bool",
    equation="total GB + margin GB <= GPU memory GB (margin 0 when not given; the stage memory model passes "
             "FIT_MARGIN_GB): TRUE exactly where FIT_VERDICT says fits",
    source="seed 002 §7.3 step 1",
)
def fits_in_gpu(total_gb, memory_gb, margin_gb=0):
    """Whether a per-GPU memory need, with a margin, fits in one GPU."""
    return total_gb + margin_gb <= memory_gb


_FIT_MARGIN_SOURCE = (
    "CUDA context: about 400 MB with CUDA >= 11.7 and lazy module loading, PyTorch's default (ptrblck, "
    "https://github.com/pytorch/pytorch/issues/109888); allocator reserve: PyTorch's caching allocator rounds blocks "
    "and keeps freed segments (reserved - allocated; 'reserved by PyTorch but unallocated' in its out-of-memory "
    "message): 1.83 GiB beside 75.31 GiB allocated on an 80 GB card, for which 5% of the model's memory is reserved "
    "(https://github.com/vllm-project/compressed-tensors/pull/587); expandable_segments lowers it (PyTorch CUDA notes)")


@formula(
    udf="FIT_MARGIN_GB", unit="GB per GPU", category="memory",
    equation="CUDA context GB + allocator reserve share x predicted total GB",
    source=_FIT_MARGIN_SOURCE,
)
def fit_margin_gb(total_gb, cuda_context_gb=_D["cuda_context_gb"], allocator_reserve_frac=_D["allocator_reserve_frac"]):
    """What the card holds beyond the predicted tensors: the CUDA context and the caching allocator's reserve."""
    return cuda_context_gb + allocator_reserve_frac * total_gb


@formula(
    udf="FIT_VERDICT", unit="text", category="memory", returns="text",
    equation='"does not fit" when total GB > GPU memory GB; "tight" when total GB + margin GB > GPU memory GB; '
             'else "fits"',
    source="the prediction (the stage memory model) against the memory the card exposes to CUDA, with "
           "FIT_MARGIN_GB as the margin: " + _FIT_MARGIN_SOURCE,
)
def fit_verdict(total_gb, memory_gb, margin_gb=0):
    """The fit answer: fits (prediction + margin within the card), tight (the card lies between the prediction and
    prediction + margin) or does not fit (the prediction alone exceeds the card)."""
    return if_(total_gb > memory_gb, "does not fit", if_(total_gb + margin_gb > memory_gb, "tight", "fits"))


@formula(
    udf="FIT_CAPACITY_GB", unit="GB per GPU", category="memory",
    equation="(GPU memory GB - CUDA context GB) / (1 + allocator reserve share): the largest predicted total that "
             "FIT_VERDICT calls fits",
    source="FIT_MARGIN_GB solved for the total (" + _FIT_MARGIN_SOURCE + ")",
)
def fit_capacity_gb(memory_gb, cuda_context_gb=_D["cuda_context_gb"], allocator_reserve_frac=_D["allocator_reserve_frac"]):
    """The largest predicted memory per GPU that still fits with its margin."""
    return (memory_gb - cuda_context_gb) / (1 + allocator_reserve_frac)


@formula(
    udf="MAX_MICRO_BATCH", unit="sequences", category="memory",
    equation="INT((GPU memory - states - overhead) / activations at micro-batch 1), at least 0",
    source="Korthikanti et al. 2022 (activations are linear in b)",
)
def max_micro_batch(memory_gb, static_gb, overhead_gb, act_gb_per_sample):
    """Largest micro-batch whose activations fit beside the model states (0 = not even 1)."""
    return max_(0, floor_int((memory_gb - static_gb - overhead_gb) / act_gb_per_sample))


# --- the stage memory model's equations (composed in xlcalc.stage_memory) -------------------------------

@formula(
    udf="LAYOUT_MESSAGE", unit="text", category="memory", returns="text",
    equation="the first violated constraint of xlcalc.layout, as 'x = v is not allowed: x must be ... (why)'; "
             "OK when heads | hidden, kv | heads, TP | heads and kv, PP | layers (or the uneven split shares "
             "evenly), CP | seq, TP*PP*CP | GPUs, DP_shard | DP, EP | experts, DP*b | batch, "
             "v = 1 or (PP > 1 and v | stage layers)",
    source="Megatron-LM argument checks (arguments.py: divisibility of heads, layers, world size, batch)",
)
def layout_message(hidden, heads, layers, seq_len, kv_heads, first_stage_layers=_D["first_stage_layers"], last_stage_layers=_D["last_stage_layers"], tp=_D["tp"], pp=_D["pp"],
                   cp=_D["cp"], dp=_D["dp"], cluster_gpus=0, dp_shard=_D["dp_shard"], experts=0, ep=1, micro_batch=_D["micro_batch"], batch_sequences=0,
                   virtual_stages=_D["virtual_stages"]):
    """Why a parallel layout does not split the model and batch into whole pieces ("OK" if it does)."""
    return layout.layout_message(locals())  # every input, by name


def _whole_stages(*, layers, pp, first_stage_layers=0, last_stage_layers=0, **_):
    layout.check_stages(layers, pp, first_stage_layers, last_stage_layers)  # the one check: its message


@formula(
    udf="STAGE_LAYERS", unit="layers", category="memory", check=_whole_stages,
    equation="L/p; uneven: the given first/last stage layers, the middle stages share the rest evenly; p = 1: L",
    source="Narayanan et al. 2021 §2.2 (L/p layers per stage); Llama 3 paper §3.3.2 (fewer layers on the first and "
           "last stage)",
)
def stage_layers(layers, pp, stage="first", first_stage_layers=_D["first_stage_layers"], last_stage_layers=_D["last_stage_layers"]):
    """Transformer layers on the first or the last pipeline stage."""
    first, _, last = layout.stage_layer_counts(locals())  # every input, by name
    return if_(eq(stage, "first"), first, last)


@formula(
    udf="LAYER_PARAMS_B", unit="billion parameters", category="memory",
    equation="(N - (2 - tied)*V*h/1e9) / L",
    source="a decoder's parameters: L layers plus the input embedding and output layer, V*h each (one if tied)",
)
def layer_params_b(params_b, layers, hidden, vocab, tied_embeddings=_D["tied_embeddings"]):
    """Parameters of one transformer layer, billions, from the model's total (MoE: all experts, averaged)."""
    return (params_b - if_(tied_embeddings, 1, 2) * vocab * hidden / 1e9) / layers


@formula(
    udf="STAGE_PARAMS_B", unit="billion parameters", category="memory",
    equation="stage layers * layer params + V*h/1e9 * (p = 1: 2 - tied; first stage: input embedding; "
             "last stage: output layer, a copy of the table when tied)",
    source="Megatron-LM: the first stage holds the embedding, the last the output layer (with tied embeddings a "
           "copy whose gradient is all-reduced with the first's); Narayanan et al. 2021 §3.2",
)
def stage_params_b(stage_layers, layer_params_b, hidden, vocab, pp=_D["pp"], tied_embeddings=_D["tied_embeddings"]):
    """Parameters of one pipeline stage (first or last) before TP and ZeRO split them, billions."""
    tables = if_(and_(eq(pp, 1), not_(tied_embeddings)), 2, 1)
    return stage_layers * layer_params_b + tables * vocab * hidden / 1e9


@formula(
    udf="STAGE_INFLIGHT_MICROBATCHES", unit="micro-batches", category="memory",
    equation="first stage: MIN(m, p) * (1 + (p-1)/(p*v) if v > 1); last stage: 1",
    source="Korthikanti et al. 2022 §4.2.3 (1F1B: the first stage holds p micro-batches in flight; interleaved "
           "schedule: x (1 + (p-1)/(p*v))); Narayanan et al. 2021 §2.2",
)
def stage_inflight_microbatches(pp, stage="first", virtual_stages=_D["virtual_stages"], microbatches=_D["microbatches"]):
    """Micro-batches whose activations a pipeline stage holds at its peak."""
    interleave = if_(virtual_stages > 1, 1 + (pp - 1) / (pp * virtual_stages), 1)
    return if_(eq(stage, "first"), min_(microbatches, pp) * interleave, 1)


@formula(
    udf="MEM_STAGE_ACT_GB", unit="GB per GPU", category="memory",
    equation="stage layers * per-layer bytes * in-flight micro-batches / 1e9",
    source="Korthikanti et al. 2022 §4.2.3",
)
def mem_stage_act_gb(stage_layers, stored_act_bytes, inflight_microbatches):
    """Activations a pipeline stage keeps for its in-flight micro-batches, GB per GPU."""
    return stage_layers * stored_act_bytes * inflight_microbatches / 1e9


@formula(
    udf="MEM_RECOMPUTE_WORKING_GB", unit="GB per GPU", category="memory",
    equation="MAX(0, bytes of one layer without recompute - bytes the mode keeps for it) / 1e9",
    source="Chen et al. 2016 (arXiv 1604.06174) §3: a recomputed segment's activations are live again during its "
           "backward; Korthikanti et al. 2022 §5",
)
def mem_recompute_working_gb(full_act_bytes, stored_act_bytes):
    """The recompute working set: one layer's activations re-materialised during its backward, GB per GPU."""
    return max_(0, full_act_bytes - stored_act_bytes) / 1e9


@formula(
    udf="MEM_LOGITS_GB", unit="GB per GPU", category="memory",
    equation="(bytes per logit * s*b/c + output copy bytes per vocabulary row) * V/t / 1e9 on the last stage (every stage when "
             "p = 1), else 0",
    source="Megatron-LM: logits cast to fp32 for the vocab-parallel cross-entropy (4 bytes, V split over t; "
           "Shoeybi et al. 2019 §3); context parallelism splits the sequence. Autocast: " + _AUTOCAST_SOURCE,
)
def mem_logits_gb(seq_len, micro_batch, vocab, tp=_D["tp"], cp=_D["cp"], logits_buffer_bytes=_D["logits_buffer_bytes"], pp=_D["pp"], stage="last",
                  output_copy_bytes=0):
    """Logits and loss buffers of one micro-batch on the last pipeline stage, GB per GPU; under torch.autocast with
    fp32 weights also the output layer's 16-bit weight copy (``output_copy_bytes`` = copy bytes x h per vocabulary
    row), kept for the logits' backward."""
    on_stage = or_(eq(pp, 1), eq(stage, "last"))
    return if_(on_stage, (logits_buffer_bytes * seq_len * micro_batch / cp + output_copy_bytes) * vocab / tp / 1e9, 0)


@formula(
    udf="MEM_GATHERED_PARAMS_GB", unit="GB per GPU", category="memory",
    equation="ZeRO-3 / FSDP full shard: 4 bytes * layer params / t * (1 + prefetched layers); with pipeline "
             "parallelism (p > 1): (2 + gradient bytes) * stage params / t; else 0",
    source="DeepSpeed memory docs (estimate_zero3_model_states_mem_needs: largest_layer_memory = "
           "4*largest_layer_params); PyTorch FSDP prefetches the next layer's all-gather. Pipelined: DeepSpeed refuses "
           "ZeRO-2/3 with pipelines (PipelineEngine: 'ZeRO-2 and ZeRO-3 are incompatible with pipeline "
           "parallelism'), so ZeRO-3 with p > 1 is PyTorch FSDP2 under torch.distributed.pipelining: torchtitan does "
           "not reshard after forward ('For PP, do not reshard after forward to avoid per-microbatch all-gathers'), "
           "the pipeline stage sets reshard_after_backward and requires_gradient_sync to False until the last "
           "micro-batch's backward (stage.py, backward_maybe_with_nosync), and FSDP2 accumulates the unsharded "
           "gradients in the reduce dtype (FSDPParam.to_accumulated_grad_if_needed)",
)
def mem_gathered_params_gb(layer_params_b, tp=_D["tp"], zero_stage=_D["zero_stage"], prefetch_layers=_D["prefetch_layers"], pp=_D["pp"], stage_params_b=0,
                           bytes_grads=_B["bytes_grads"]):
    """Parameters ZeRO-3/FSDP gathers whole for the layer computing (and those prefetched), GB per GPU.

    With pipeline parallelism the whole stage stays gathered (16-bit) through the step and its gradients
    accumulate unsharded (``bytes_grads`` each) until the last micro-batch: (2 + bytes_grads) x stage params / t.
    """
    pipelined = (2 + bytes_grads) * stage_params_b / tp
    one_layer = 4 * layer_params_b / tp * (1 + prefetch_layers)
    return if_(zero_stage >= 3, if_(pp > 1, pipelined, one_layer), 0)


@formula(
    udf="ACT_AUTOCAST_COPY_BYTES", unit="bytes per layer", category="memory",
    equation="autocast copy bytes * layer params / t, kept per micro-batch; 0 under full or per-op recompute (the "
             "recomputed layer's copies are in its working set)",
    source=_AUTOCAST_SOURCE,
)
def act_autocast_copy_bytes(layer_params_b, tp=_D["tp"], recompute=_D["recompute"], autocast_copy_bytes=_D["autocast_copy_bytes"]):
    """Bytes of the 16-bit weight copies one layer's forward under torch.autocast keeps for its backward."""
    kept = if_(or_(eq(recompute, "full"), eq(recompute, "op_selective")), 0, 1)
    return kept * autocast_copy_bytes * layer_params_b * 1e9 / tp


@formula(
    udf="MEM_OPTIMIZER_STEP_GB", unit="GB per GPU", category="memory",
    equation="optimizer step bytes * N/(tp*pp), / dp under ZeRO-1, 2 and 3 (sharded as the optimizer states)",
    source="PyTorch torch/optim/adam.py (2.13), _multi_tensor_adam, the foreach step AdamW takes by default on GPUs "
           "(optimizer.py _default_to_fused_or_foreach): exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs) "
           "(line 762) makes one tensor of each parameter's size and dtype, live until _foreach_addcdiv_ (line 769); "
           "the fused step (_fused_adam, fused=True) allocates none; measured with PyTorch's MemTracker by "
           "scripts/torch_memory.py",
)
def mem_optimizer_step_gb(params_b, zero_stage=_D["zero_stage"], dp=_D["dp"], tp=_D["tp"], pp=_D["pp"], optimizer_step_bytes=_D["optimizer_step_bytes"]):
    """Temporaries of the optimizer step per GPU, GB: live only while the step runs, beside all the gradients."""
    return optimizer_step_bytes * params_b / (tp * pp) / if_(zero_stage >= 1, dp, 1)


@formula(
    udf="MEM_STAGE_TOTAL_GB", unit="GB per GPU", category="memory",
    equation="weights + optimizer + FP8 copies + gathered parameters + buckets + other + gradients + MAX(activations + "
             "recompute working set + logits, optimizer step temporaries); with grads_freed and PP = 1: "
             "MAX(gradients + optimizer step temporaries, activations + recompute working set + logits) instead",
    source="seed 002 §7.1.3 (states + activations + overhead), by part; PyTorch Optimizer.zero_grad(set_to_none=True) "
           "(default since 2.0): gradients are None from the optimizer step to the backward, and the activations "
           "are freed as the backward makes the gradients; the optimizer step's temporaries (MEM_OPTIMIZER_STEP_GB) "
           "live during the step, after the backward has freed the activations",
)
def mem_stage_total_gb(weights_gb, grads_gb, optimizer_gb, fp8_gb, gathered_gb, activations_gb, recompute_gb,
                       logits_gb, comm_buffer_gb=_D["comm_buffer_gb"], overhead_gb=_D["overhead_gb"], grads_freed=_D["grads_freed"], pp=_D["pp"], step_gb=0):
    """Memory per GPU of one pipeline stage: its parts at the step's peak moment.

    Gradients that persist across steps (Megatron-Core's contiguous buffer) are there at the activations' peak,
    the start of the backward: the parts add up. Gradients set to None by ``zero_grad()`` appear during the
    backward, layer by layer, as the activations of those layers are freed: at the start of the backward there
    are none, at the optimizer step all of them and no activations, so the stage needs the larger of the two.
    A pipeline stage accumulates gradients over its micro-batches while others are in flight: there the sum holds.
    The optimizer step's temporaries (``step_gb``) come after the backward, beside all the gradients and without
    the activations.
    """
    act = activations_gb + recompute_gb + logits_gb
    moment = if_(and_(grads_freed, eq(pp, 1)), max_(grads_gb + step_gb, act), grads_gb + max_(act, step_gb))
    return weights_gb + optimizer_gb + fp8_gb + gathered_gb + moment + comm_buffer_gb + overhead_gb


@formula(
    udf="MEM_PEAK_GB", unit="GB per GPU", category="memory",
    equation="MAX(first stage, last stage)",
    source="the GPU of the heaviest stage sets the memory a layout needs",
)
def mem_peak_gb(first_stage_gb, last_stage_gb):
    """Memory per GPU a layout needs: its heavier pipeline stage."""
    return max_(first_stage_gb, last_stage_gb)


@formula(
    udf="MEM_STATES_GB", unit="GB per GPU", category="memory",
    equation="weights + gradients + optimizer + FP8 copies + gathered parameters",
    source="Rajbhandari et al. 2019 (ZeRO) §3.1: model states; DeepSpeed ZeRO-3 gathered layer",
)
def mem_states_gb(weights_gb, grads_gb, optimizer_gb, fp8_gb=0, gathered_gb=0):
    """Model-state memory of one pipeline stage per GPU (everything that does not grow with the micro-batch)."""
    return weights_gb + grads_gb + optimizer_gb + fp8_gb + gathered_gb


@formula(
    udf="PEAK_STAGE_PART_GB", unit="GB per GPU", category="memory",
    equation="first stage's part if first stage total >= last stage total, else the last stage's",
    source="the GPU of the heaviest stage sets the memory a layout needs",
)
def peak_stage_part_gb(first_stage_gb, last_stage_gb, first_part_gb, last_part_gb):
    """A part of the memory of the heavier pipeline stage."""
    return if_(first_stage_gb >= last_stage_gb, first_part_gb, last_part_gb)


__all__ = [name for name, f in REGISTRY.items() if f.func.__module__ == __name__]  # every formula above
