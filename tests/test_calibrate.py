"""`xlcalc calibrate` and `plan --profile`: one measured run fits the matmul efficiency (and a memory margin).

The 'measured' runs here are built from the planner's own step-time model at a known efficiency, so that the
calibration must give that efficiency back; step times and tokens/s are converted in the test itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from xlcalc.cli import build_parser, main
from xlcalc.errors import InputError
from xlcalc.planner import Settings, plan
from xlcalc.planner.calibrate import MAX_PROFILE_BYTES, calibrate, load_profile, save_profile

ROOT = Path(__file__).resolve().parent.parent
RUN = dict(gpu="h100", n_gpus=16, seq_len=4096, global_batch_tokens=4096 * 128)
# every choice pinned: the planner's choice of what is left out may differ between efficiencies
LAYOUT = dict(tp=2, pp=2, micro_batch=1, recompute="selective", zero_stage=1, seq_parallel=True, virtual_stages=1)
FLAGS = ["--model", "llama2-13b", "--gpu", "h100", "--n-gpus", "16", "--seq-len", "4096",
         "--global-batch-tokens", str(4096 * 128), "--tp", "2", "--pp", "2", "--micro-batch", "1",
         "--recompute", "selective", "--zero-stage", "1", "--seq-parallel", "--virtual-stages", "1",
         "--stack", "megatron"]


def _measured(eff: float, model: str = "llama2-13b", **layout) -> float:
    """Tokens/s per GPU the step-time model predicts for the layout at matmul efficiency ``eff``."""
    res = plan(model, **RUN, tokens_t=1, top=1, settings=Settings(stack="megatron", matmul_efficiency=eff),
               **(layout or LAYOUT))
    return res.plans[0].tokens_per_s_per_gpu


@pytest.mark.parametrize("eff", [0.42, 0.61, 0.83])
def test_calibrating_on_the_models_own_prediction_gives_its_efficiency_back(eff):
    profile, best = calibrate("llama2-13b", **RUN, settings=Settings(stack="megatron"), tokens_per_s=_measured(eff),
                              **LAYOUT)
    assert profile.matmul_efficiency == pytest.approx(eff, abs=2e-4)
    assert (best.tp, best.pp, best.micro_batch, best.recompute) == (2, 2, 1, "selective")


def test_a_step_time_is_the_same_measurement_as_its_tokens_per_second():
    tokens = _measured(0.55)
    step_s = 4096 * 128 / (tokens * 16)  # tokens per step / (tokens/s per GPU x GPUs)
    profile, _ = calibrate("llama2-13b", **RUN, settings=Settings(stack="megatron"), step_s=step_s, **LAYOUT)
    assert profile.matmul_efficiency == pytest.approx(0.55, abs=2e-4)
    assert profile.calibrated_on.measured_step_s == pytest.approx(step_s, rel=1e-9)


def test_a_profile_round_trips(tmp_path):
    profile, _ = calibrate("llama2-13b", **RUN, settings=Settings(stack="megatron", link_efficiency=0.7),
                           tokens_per_s=_measured(0.6), peak_memory_gb=50.0, **LAYOUT)
    path = tmp_path / "p.json"
    save_profile(profile, path)
    back = load_profile(path)
    assert back == profile
    data = json.loads(path.read_text())
    assert data["schema"] == "xlcalc-calibration-profile" and data["settings"] == {"link_efficiency": 0.7}
    assert data["calibrated_on"]["measured_peak_memory_gb"] == 50.0
    assert not [p for p in tmp_path.iterdir() if p.name != "p.json"]  # no temporary file left


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_plan_with_the_profile_predicts_the_measured_run_and_other_clusters(tmp_path, capsys):
    measured = _measured(0.5) * 0.9  # not the model's own number: the stack runs 10% slower than at 0.5
    peak = 61.0
    path = tmp_path / "mine.json"
    rc, out, err = _run(capsys, "calibrate", *FLAGS, "--tokens-per-s", f"{measured!r}", "--peak-memory-gb",
                        str(peak), "--out", str(path), "--json")
    assert rc == 0, err
    fitted = json.loads(out)["profile"]["matmul_efficiency"]
    assert 0.3 < fitted < 0.5
    plan_flags = [f for f in FLAGS if f not in ("--stack", "megatron")]
    rc, out, err = _run(capsys, "plan", *plan_flags, "--profile", str(path), "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["plans"][0]["tokens_per_s_per_gpu"] == pytest.approx(measured, rel=0.01)
    assert data["plans"][0]["memory_gb"] == pytest.approx(peak, rel=0.01)
    assert data["matmul_efficiency"] == fitted and "calibrated" in data["profile"]
    # another cluster size and layout: planned at the fitted efficiency, not the stack's published one
    rc, out, _ = _run(capsys, "plan", "--model", "llama2-13b", "--gpu", "h100", "--n-gpus", "64", "--seq-len", "4096",
                      "--global-batch-tokens", str(4096 * 512), "--profile", str(path), "--json")
    assert rc == 0 and json.loads(out)["matmul_efficiency"] == fitted
    rc, out, _ = _run(capsys, "plan", "--model", "llama2-13b", "--gpu", "h100", "--n-gpus", "64", "--seq-len", "4096",
                      "--global-batch-tokens", str(4096 * 512), "--stack", "megatron", "--json")
    assert json.loads(out)["matmul_efficiency"] != fitted


def test_calibrate_text_output_names_the_fit_and_the_file(tmp_path, capsys):
    path = tmp_path / "p.json"
    rc, out, err = _run(capsys, "calibrate", *FLAGS, "--tokens-per-s", str(_measured(0.7)), "--out", str(path))
    assert rc == 0, err
    assert "fitted matmul efficiency: 0.7 " in out and str(path) in out and path.exists()


@pytest.mark.parametrize("extra, names", [
    ([], ["tokens_per_s"]),
    (["--tokens-per-s", "-5"], ["tokens_per_s"]),
    (["--tokens-per-s", "abc"], ["tokens_per_s"]),
    (["--tokens-per-s", "1e8"], ["tokens_per_s"]),           # beyond 100% of peak
    (["--tokens-per-s", "0.5"], ["tokens_per_s"]),           # below 5% of peak
    (["--step-s", "0"], ["step_s"]),
    (["--step-s", "1e-6"], ["step_s"]),
    (["--tokens-per-s", "3000", "--step-s", "2"], ["step_s"]),
    (["--tokens-per-s", "3000", "--peak-memory-gb", "500"], ["peak_memory_gb"]),
    (["--tokens-per-s", "3000", "--matmul-efficiency", "0.5"], ["matmul_efficiency"]),
])
def test_bad_measurements_are_refused_by_name(tmp_path, capsys, extra, names):
    path = tmp_path / "p.json"
    rc, out, err = _run(capsys, "calibrate", *FLAGS, *extra, "--out", str(path))
    assert rc == 2 and out == ""
    for n in names:
        assert f"{n} = " in err
    assert "Traceback" not in err and not path.exists()


def test_every_missing_input_is_named_at_once(tmp_path, capsys):
    rc, _, err = _run(capsys, "calibrate", "--model", "llama2-13b", "--gpu", "h100", "--out", str(tmp_path / "p"))
    assert rc == 2
    for n in ("n_gpus", "seq_len", "global_batch_tokens", "tp", "pp", "micro_batch", "recompute", "tokens_per_s"):
        assert f"{n} = (empty)" in err


def test_a_profile_path_that_cannot_be_written_is_refused_by_name(tmp_path, capsys):
    """A missing folder was a FileNotFoundError traceback from the lock file; a folder is refused as before."""
    for path, why in ((tmp_path / "no-such-folder" / "p.json", "a path that can be written"),
                      (tmp_path, "a regular file or a new file name")):
        rc, out, err = _run(capsys, "calibrate", *FLAGS, "--tokens-per-s", "3000", "--out", str(path))
        assert rc == 2 and out == "" and "error: out = " in err and f"out must be {why}" in err, err
    assert not (tmp_path / "no-such-folder").exists()


def test_calibrate_help_states_no_default_it_does_not_take():
    """calibrate requires the measured run's sequence length and batch: its help says so, and claims no default
    (it said "default: a catalog model's pre-training sequence length, else 4096" and then refused to run)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["calibrate"]
    helps = {a.dest: a.help or "" for a in sub._actions}
    for name in ("seq_len", "global_batch_tokens"):
        assert "(required)" in helps[name] and "default" not in helps[name], helps[name]
    assert "else 4096" not in helps["config"]
    rc = main(["calibrate", "--model", "llama3.1-8b", "--gpu", "h100", "--n-gpus", "8", "--tp", "1", "--pp", "1",
               "--micro-batch", "1", "--recompute", "none", "--tokens-per-s", "9000", "--out", "unused.json"])
    assert rc == 2  # the catalog model's 8192 is not taken: the required inputs really are required


def _good(tmp_path: Path) -> dict:
    profile, _ = calibrate("llama2-13b", **RUN, settings=Settings(stack="megatron"), tokens_per_s=_measured(0.6),
                           **LAYOUT)
    save_profile(profile, tmp_path / "good.json")
    return json.loads((tmp_path / "good.json").read_text())


def _bad_files(tmp_path: Path) -> dict[str, tuple[str | bytes, str]]:
    good = _good(tmp_path)
    eff = dict(good, matmul_efficiency=7)
    extra = dict(good, surprise=1)
    nan = json.dumps(good).replace('"matmul_efficiency": 0.6', '"matmul_efficiency": NaN')
    deep = dict(good, calibrated_on=dict(good["calibrated_on"], tp="two"))
    stack = dict(good, stack="pytorch-2030")
    return {
        "not JSON": ("{not json", "not JSON"),
        "oversized": (" " * (MAX_PROFILE_BYTES + 1), "at most"),
        "foreign": (json.dumps({"schema": "something-else", "matmul_efficiency": 0.5}), "schema"),
        "a list": ("[1, 2]", "schema"),
        "out of range": (json.dumps(eff), "profile matmul_efficiency"),
        "unknown field": (json.dumps(extra), "profile surprise"),
        "NaN": (nan, "NaN"),
        "nested field": (json.dumps(deep), "profile calibrated_on.tp"),
        "unknown stack": (json.dumps(stack), "stack"),
        "binary": (b"\xff\xfe\x00garbage", "not JSON"),
    }


def test_bad_profile_files_are_refused_with_the_field_named(tmp_path, capsys):
    for label, (content, expected) in _bad_files(tmp_path).items():
        path = tmp_path / "bad.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        with pytest.raises(InputError) as err:
            load_profile(path)
        assert expected in str(err.value), label
        rc, out, text = _run(capsys, "plan", "--model", "llama2-13b", "--gpu", "h100", "--n-gpus", "16",
                             "--profile", str(path))
        assert rc == 2 and out == "" and "Traceback" not in text and expected in text, label


def test_a_missing_profile_and_a_folder_are_refused(tmp_path, capsys):
    for path in (tmp_path / "absent.json", tmp_path):
        rc, _, err = _run(capsys, "plan", "--model", "llama2-13b", "--gpu", "h100", "--n-gpus", "16",
                          "--profile", str(path))
        assert rc == 2 and "profile = " in err


def test_a_flag_contradicting_the_profile_is_refused_not_ignored(tmp_path, capsys):
    _good(tmp_path)
    path = str(tmp_path / "good.json")
    base = ["plan", "--model", "llama2-13b", "--gpu", "h100", "--n-gpus", "16", "--seq-len", "4096",
            "--global-batch-tokens", str(4096 * 128), "--profile", path]
    for extra, name in ((["--matmul-efficiency", "0.9"], "matmul_efficiency"), (["--stack", "fsdp-eager"], "stack"),
                        (["--efficiency-of-mamf"], "efficiency_of_mamf")):
        rc, _, err = _run(capsys, *base, *extra)
        assert rc == 2 and f"{name} = " in err, extra
    rc, _, err = _run(capsys, *base, "--stack", "megatron", "--json")  # the same stack agrees
    assert rc == 0, err


def test_the_command_is_documented():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    planner = (ROOT / "docs" / "planner.md").read_text(encoding="utf-8")
    assert "xlcalc calibrate" in readme and "plan --profile" in readme
    assert "xlcalc calibrate" in planner and "(calibrate.md)" in planner and "(docs/calibrate.md)" in readme


def test_the_calibration_table_holds_for_two_sources():
    """docs/calibrate.md's calibrated figures for two small sources, computed again here (the whole table takes
    about a minute: scripts/make_calibration_docs.py --check)."""
    from xlcalc.validation import calibration as C
    from xlcalc.validation.pipeline import validate
    from xlcalc.validation.runs import load_runs

    sources = {"nemo-perf-summary-24.07", "torchtitan-performance-a100"}
    ids = {r["id"] for r in load_runs() if r["source_id"] in sources}
    rows = C.by_source(validate(ids=ids)["stated"]["scored"], sources=sources)
    assert {r.source_id for r in rows} == sources
    doc = (ROOT / "docs" / "calibrate.md").read_text(encoding="utf-8")
    for r in rows:
        line = next(x for x in doc.splitlines() if x.startswith(f"| {r.source_id} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[2:7] == [str(r.runs), f"{r.median_of_choices:.1%}", f"{r.worst_choice:.1%}", f"{r.within:.0%}",
                              f"{r.efficiencies[0]:.3f}-{r.efficiencies[1]:.3f}"]
        # an independent check of one figure: the median over calibration runs is at most the worst one
        assert float(cells[3].rstrip("%")) <= float(cells[4].rstrip("%"))
    assert re.search(r"target .* is met on \d+ of \d+ sources", doc)
