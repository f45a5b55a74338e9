"""Mixture of experts in the planner: expert parallelism, the all-to-all, expert sharding, active-parameter MFU,
and the DeepSeek-V3 check against its technical report."""

import functools
import json
import subprocess
import sys

import pytest

import lo_batch
from conftest import ROOT
from xlcalc import catalog
from xlcalc.errors import InputError
from xlcalc.formulas import communication as fcomm
from xlcalc.formulas import compute
from xlcalc.planner import Settings, arch_from_flags, arch_from_model, plan
from xlcalc.stage_memory import stage_memory

# DeepSeek-V3 Technical Report (arXiv 2412.19437):
# §3.2 "16-way Pipeline Parallelism (PP), 64-way Expert Parallelism (EP) spanning 8 nodes, and ZeRO-1 Data
#       Parallelism (DP)"; 2048 H800 GPUs, 8 per node, NVLink 160 GB/s and InfiniBand 50 GB/s per GPU.
# §3.2.1 DualPipe "overlap[s] the computation and communication within a pair of individual forward and backward
#       chunks", so that all-to-all is "fully overlapped".
# §3.2.2 node-limited routing: "each token [is] dispatched to at most 4 nodes"; "only 20 SMs are sufficient" for
#       the all-to-all (of the H800's 132).
# §3.3 FP8 mixed precision; the dispatched activations are quantised to FP8, the combine stays in BF16.
# §4.2 sequence length 4K, batch size up to 15360 sequences; 14.8T tokens.
# Table 1: pre-training 2664K H800 GPU hours.
DSV3_GPU_HOURS = 2.664e6
DSV3_TOKENS_T = 14.8
# 61 layers on 16 stages: the report does not list the split; 3, 4 x 14, 2 is the split whose middle stages are
# even (the layout check's uneven form), the last stage lighter for the output head
DSV3_STAGES = [3] + [4] * 14 + [2]
DSV3_SETTINGS = dict(ep_overlap=1.0, max_nodes_per_token=4, comm_sms=20, a2a_bytes=1.5)


def _dsv3(**settings):
    return plan("deepseek-v3", gpu="h800", n_gpus=2048, seq_len=4096, global_batch_tokens=15360 * 4096,
                tokens_t=DSV3_TOKENS_T, tp=1, stage_layers=DSV3_STAGES, ep=64, zero_stage=1, fp8=True,
                settings=Settings(stack="megatron", **settings))  # the profile the validation scores the report with


@functools.cache
def _dsv3_published():
    return _dsv3(**DSV3_SETTINGS)


@pytest.fixture(scope="module")
def dsv3():
    return _dsv3_published()


@functools.cache
def _mfu_cases():
    """(plan result, peak TFLOP/s, tokens in T) for DeepSeek-V3 and a dense model, with the scenario each gives."""
    from xlcalc.scenario import Scenario

    dense = plan("llama2-7b", gpu="h100", n_gpus=64, seq_len=4096, global_batch_tokens=4 * 2**20, tokens_t=2)
    cases = []
    for k, (res, peak, tokens_t) in enumerate([(_dsv3_published(), 989.4, DSV3_TOKENS_T), (dense, 989.4, 2.0)]):
        p = res.plans[0]
        sc = Scenario.build(name=f"plan {k}", params_b=res.params_b, tokens_t=tokens_t, peak_tflops=peak,
                            n_gpus=res.n_gpus, mfu=p.mfu_6nd)
        cases.append((res, peak, tokens_t, sc))
    return cases


@lo_batch.register("moe")
def _produce_moe(work):
    """The workbook of each plan's scenario, for the session's one LibreOffice run."""
    from xlcalc.workbook import build

    books = []
    for k, (_, _, _, sc) in enumerate(_mfu_cases()):
        books.append(work / f"plan{k}.xlsx")
        build(books[-1], [sc])
    return books, None


def test_deepseek_v3_within_25_percent_of_published_gpu_hours(dsv3):
    assert dsv3.plans, dsv3.rejected_by_reason
    p = dsv3.plans[0]
    assert (p.tp, p.pp, p.ep, p.dp, p.zero_stage, p.fp8) == (1, 16, 64, 128, 1, True)
    assert p.fits and p.memory_gb <= 80
    assert p.gpu_hours == pytest.approx(DSV3_GPU_HOURS, rel=0.25)


def test_deepseek_v3_all_to_all_without_dualpipe_is_exposed(dsv3):
    # no overlap, no node limit, bf16 all-to-all (Megatron's plain dispatcher): the all-to-all is on the critical path
    plain = _dsv3().plans[0]
    assert plain.ep_comm_s > 0 and dsv3.plans[0].ep_comm_s == 0
    assert plain.gpu_hours > dsv3.plans[0].gpu_hours


def test_moe_mfu_counts_active_parameters(dsv3):
    model = catalog.get_model("deepseek-v3")
    p = dsv3.plans[0]
    assert dsv3.params_b == pytest.approx(model.active_params_b) and 36 < dsv3.params_b < 39  # 37B activated
    # 6*N*D with N = active parameters: MFU = 6 N throughput / peak (H800 dense bf16 989.4 TFLOPS)
    assert p.mfu_6nd == pytest.approx(6 * model.active_params_b * 1e9 * p.tokens_per_s_per_gpu / 989.4e12)
    assert p.mfu_6nd < 1
    # and the estimate face's days at that MFU are the plan's days
    days = compute.train_days(params_b=dsv3.params_b, tokens_t=DSV3_TOKENS_T, peak_tflops=989.4, n_gpus=2048,
                              mfu=p.mfu_6nd)
    assert days == pytest.approx(p.days, rel=1e-6)


def test_moe_search_finds_expert_parallel_plans():
    res = plan("deepseek-v3", gpu="h800", n_gpus=2048, seq_len=4096, global_batch_tokens=15360 * 4096,
               tokens_t=DSV3_TOKENS_T, fp8=True, pp=1, tp=8, top=3)
    assert res.plans and all(256 % p.ep == 0 and (p.dp * p.cp) % p.ep == 0 for p in res.plans)
    assert any(p.ep > 1 for p in res.plans)


def test_ep_pin_errors_name_the_input():
    kw = dict(gpu="h800", n_gpus=2048, seq_len=4096, global_batch_tokens=15360 * 4096, tokens_t=1)
    with pytest.raises(InputError, match="ep = 3.*divisor of experts = 256"):
        plan("deepseek-v3", ep=3, **kw)
    with pytest.raises(InputError, match="ep = 8.*dense model"):
        plan("llama2-7b", ep=8, **kw)
    # EP is carved out of a stage's TP x CP x DP GPUs: TP 8 x PP 16 on 2048 GPUs leaves 128 per stage, so EP 256
    # cannot be placed
    with pytest.raises(InputError, match="ep = 256.*divisor of TP x CP x DP = 128"):
        plan("deepseek-v3", tp=8, stage_layers=DSV3_STAGES, ep=256, **kw)
    # EP 64 fits there only with whole experts (expert TP 1): 64 x 8 > 128
    res = plan("deepseek-v3", tp=8, stage_layers=DSV3_STAGES, ep=64, fp8=True, **kw)
    assert res.plans and {(p.ep, p.etp) for p in res.plans} == {(64, 1)}
    with pytest.raises(InputError, match="etp = 2.*dense model"):
        plan("llama2-7b", etp=2, **kw)


def test_stage_memory_splits_routed_experts_over_ep():
    # one stage (PP 1) holds all 10B parameters, 8B of them routed experts: independent arithmetic on the counts
    base = dict(params_b=10.0, layers=8, hidden=1024, heads=8, ffn_hidden=4096, vocab=32000, seq_len=2048,
                micro_batch=1, expert_params_b=8.0, experts=16, tp=1, pp=1, dp=16)
    for ep in (1, 4, 16):
        m = stage_memory(**base, ep=ep, zero_stage=0)
        held = 10.0 - 8.0 * (1 - 1 / ep)  # dense part whole, the routed experts / EP
        assert m.parts_gb["first"]["weights"] == pytest.approx(2 * held, rel=1e-9)
        # ZeRO-3 shards the dense part over DP and the experts over DP/EP: (dense + experts) / DP either way
        z3 = stage_memory(**base, ep=ep, zero_stage=3)
        assert z3.parts_gb["first"]["weights"] == pytest.approx(2 * 10.0 / 16, rel=1e-9)
    # TP 2 with whole experts (expert TP 1): the dense part / TP, each GPU 1/EP of the experts
    m = stage_memory(**{**base, "tp": 2, "dp": 8}, ep=4, expert_tp=1, zero_stage=0)
    assert m.parts_gb["first"]["weights"] == pytest.approx(2 * (2.0 / 2 + 8.0 / 4), rel=1e-9)
    with pytest.raises(InputError, match="ep = 3"):
        stage_memory(**base, ep=3, zero_stage=0)
    # FP8 weight copies (1 byte per parameter) are split as the weights are: the routed experts / EP
    for ep in (1, 4, 16):
        f8 = stage_memory(**base, ep=ep, zero_stage=0, bytes_fp8=1)
        assert f8.parts_gb["first"]["fp8_copies"] == pytest.approx(10.0 - 8.0 * (1 - 1 / ep), rel=1e-9)


def test_all_to_all_time_independent_arithmetic():
    # EP 16 over two NVLink domains of 8 (stride 1): a copy of the micro-batch's tokens is 4096 x 4096 x 2 bytes;
    # top-2 sends 2 x 7/16 of it over NVLink and 2 x 8/16 over the NIC, four times (dispatch + combine, fwd + bwd)
    copy = 4096 * 4096 * 2
    inside, across = copy * 2 * 7 / 16, copy * 2 * 8 / 16
    expect = 4 * max(inside / 450e9, across / 50e9) / 0.8
    t = fcomm.ep_alltoall_time_s(layers_per_stage=1, tokens=4096, hidden=4096, topk=2, ep=16, ranks_per_domain=8,
                                 scaleup_gb_s=450, scaleout_gb_s=50, link_efficiency=0.8, window_s=0)
    assert t == pytest.approx(expect)
    # node-limited routing to at most 1 other domain: one copy per token over the NIC (x 1/2: of 2 domains one is
    # remote), instead of top-k copies
    t1 = fcomm.ep_alltoall_time_s(layers_per_stage=1, tokens=4096, hidden=4096, topk=2, ep=16, ranks_per_domain=8,
                                  scaleup_gb_s=450, scaleout_gb_s=50, link_efficiency=0.8, window_s=0,
                                  max_nodes_per_token=1)
    assert t1 == pytest.approx(4 * max(inside / 450e9, copy * 1 * 0.5 / 50e9) / 0.8)
    # overlap hides it behind the window
    assert fcomm.ep_alltoall_time_s(layers_per_stage=1, tokens=4096, hidden=4096, topk=2, ep=16, ranks_per_domain=8,
                                    scaleup_gb_s=450, scaleout_gb_s=50, link_efficiency=0.8, window_s=10,
                                    ep_overlap=1) == 0


def test_mla_projections_charged_by_their_parameters():
    model = catalog.get_model("deepseek-v3")
    a = arch_from_model(model)
    heads, kv, dh = a.projection_shape
    # Q, K, V, O of the GQA-shaped block hold h*dh*(2*heads + 2*kv) parameters = MLA's attention parameters
    assert model.hidden * dh * (2 * heads + 2 * kv) == pytest.approx(model.attention_params(), rel=1e-3)
    assert a.head_dim == (128 + 64 + 128) / 2  # the core: q/k heads of 192, v heads of 128
    dense = arch_from_flags(32, 4096, 32)
    assert dense.projection_shape == (32, 32, 128) and dense.n_params_b == dense.params_b


def test_cli_ep_pin_and_json():
    out = subprocess.run([sys.executable, "-m", "xlcalc", "plan", "--model", "deepseek-v3", "--gpu", "H800",
                          "--gpus", "2048", "--seq-len", "4096", "--global-batch-tokens", str(15360 * 4096),
                          "--tokens-t", "14.8", "--fp8", "--tp", "1", "--layers-per-stage",
                          ",".join(map(str, DSV3_STAGES)), "--ep", "64", "--zero-stage", "1", "--ep-overlap", "1",
                          "--max-nodes-per-token", "4", "--comm-sms", "20", "--a2a-bytes", "1.5", "--json"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["plans"][0]["ep"] == 64 and "ep_comm_s" in data["plans"][0]
    assert data["params_b"] == pytest.approx(catalog.get_model("deepseek-v3").active_params_b)
    bad = subprocess.run([sys.executable, "-m", "xlcalc", "plan", "--model", "deepseek-v3", "--gpu", "H800",
                          "--gpus", "2048", "--seq-len", "4096", "--global-batch-tokens", str(15360 * 4096),
                          "--ep", "3"], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode != 0 and "ep = 3" in bad.stderr and "Traceback" not in bad.stderr


def test_one_mfu_convention_across_faces_moe_and_dense():
    """plan's days = estimate's = TRAIN_DAYS (the worksheet function) = the workbook's Train_Days recalculated by
    LibreOffice, at the plan's mfu_6nd, N (active parameters for an MoE) and tokens, within 1%."""
    sys.path.insert(0, str(ROOT / "udfs"))
    import openpyxl

    import xlcalc_udfs as u
    from test_workbook_libreoffice import named_cell

    cases = _mfu_cases()
    for res, peak, tokens_t, _ in cases:
        p = res.plans[0]
        args = dict(params_b=res.params_b, tokens_t=tokens_t, peak_tflops=peak, n_gpus=res.n_gpus, mfu=p.mfu_6nd)
        assert compute.train_days(**args) == pytest.approx(p.days, rel=0.01)                    # Python
        assert u.TRAIN_DAYS(*([[v]] for v in args.values())) == pytest.approx(p.days, rel=0.01)  # worksheet function
        out = subprocess.run([sys.executable, "-m", "xlcalc", "estimate", "--params-b", str(res.params_b),
                              "--tokens-t", str(tokens_t), "--peak-tflops", str(peak), "--n-gpus", str(res.n_gpus),
                              "--mfu", str(p.mfu_6nd), "--json"], capture_output=True, text=True, cwd=ROOT)
        assert json.loads(out.stdout)["results"]["Train_Days"] == pytest.approx(p.days, rel=0.01)  # estimate
    paths, _ = lo_batch.results("moe")
    for path, (res, _, _, _) in zip(paths, cases):
        wb = openpyxl.load_workbook(path, data_only=True)
        assert named_cell(wb, "Train_Days").value == pytest.approx(res.plans[0].days, rel=0.01)  # the workbook


def test_estimate_counts_an_moe_by_its_active_parameters():
    # DeepSeek-V3 Technical Report: 37B activated of 671B; 14.8T tokens -> 6*N*D with N = active parameters
    from xlcalc.scenario import Scenario, evaluate
    sc = Scenario.build(model="deepseek-v3", gpu="h800", n_gpus=2048, tokens_t=14.8, mfu=0.35, tp=8, pp=1)
    assert sc.params_b == pytest.approx(671, rel=0.01) and sc.active_params_b == pytest.approx(37, rel=0.02)
    res = evaluate(sc)
    assert res["Train_FLOPs"] == pytest.approx(6 * sc.active_params_b * 1e9 * 14.8e12)
    assert res["GPU_Hours"] == pytest.approx(6 * sc.active_params_b * 1e9 * 14.8e12 / (989.4e12 * 0.35) / 3600)
    # a dense model: N = all parameters (Active_Params_B 0)
    dense = Scenario.build(model="llama2-70b")
    assert dense.active_params_b == 0
    assert evaluate(dense)["Train_FLOPs"] == pytest.approx(6 * dense.params_b * 1e9 * dense.tokens_t * 1e12)
    out = subprocess.run([sys.executable, "-m", "xlcalc", "estimate", "--model", "deepseek-v3", "--gpu", "h800",
                          "--n-gpus", "2048", "--tokens-t", "14.8", "--mfu", "0.35", "--tp", "8", "--pp", "1",
                          "--json"], capture_output=True, text=True, cwd=ROOT)
    assert json.loads(out.stdout)["results"]["GPU_Hours"] == pytest.approx(res["GPU_Hours"])
