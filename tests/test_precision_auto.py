"""precision.dtype=auto and the bf16 probe (core/train/precision_probe.py): the probe's result is
injected through MEGAZOO_BF16_PROBE (or a counting stand-in for the GEMM timer), so every test
decides the same on any machine."""

from __future__ import annotations

import math

import pytest
import torch
import yaml

from megazoo.core.train import flops, precision_probe
from megazoo.core.train.errors import ConfigError
from megazoo.core.train.precision_probe import ENV, bf16_is_faster, probe, resolve_dtype, settle
from megazoo.core.train.trainer import Trainer
from megazoo.core.verbosity import ENV as VERBOSITY
from tests.train_cases import one_thread, tiny

SLOW_PAIR = "0.325,0.168"  # fp32,bf16 TFLOP/s: an Emerald Rapids without AMX (issue 42)
WARNING = ("precision.dtype=bf16: bf16 GEMMs run 0.52x fp32 on this CPU (0.168 vs 0.325 TFLOP/s; "
           f"env: {ENV}={SLOW_PAIR}); precision.dtype=auto picks fp32")


@pytest.fixture
def quiet_env(monkeypatch, tmp_path):
    """A private cache, normal verbosity, nothing injected."""
    monkeypatch.setenv("MEGAZOO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv(VERBOSITY, raising=False)
    return tmp_path


# the resolver ------------------------------------------------------------------------------------
@pytest.mark.parametrize("injected, chosen", [("slower", "fp32"), ("faster", "bf16"), (SLOW_PAIR, "fp32"),
                                              ("0.2,0.6", "bf16"), (" Faster ", "bf16")])
def test_auto_follows_the_injected_probe(quiet_env, monkeypatch, injected, chosen):
    monkeypatch.setenv(ENV, injected)
    got, line = resolve_dtype("auto", "cpu")
    assert got == chosen and bf16_is_faster("cpu") == (chosen == "bf16")
    assert line.startswith(f"precision.dtype=auto picks {chosen}: bf16 GEMMs run ") and f"env: {ENV}=" in line


def test_explicit_bf16_warns_only_where_slower(quiet_env, monkeypatch):
    monkeypatch.setenv(ENV, SLOW_PAIR)
    assert resolve_dtype("bf16", "cpu") == ("bf16", WARNING)
    monkeypatch.setenv(ENV, "slower")
    assert resolve_dtype("bf16", "cpu") == ("bf16", f"precision.dtype=bf16: bf16 GEMMs run slower than fp32 on this "
                                                    f"CPU (env: {ENV}=slower); precision.dtype=auto picks fp32")
    monkeypatch.setenv(ENV, "faster")
    assert resolve_dtype("bf16", "cpu") == ("bf16", None)
    for name in ("fp32", "fp16"):  # nothing to say, nothing probed (a bad value would raise)
        monkeypatch.setenv(ENV, "nonsense")
        assert resolve_dtype(name, "cpu") == (name, None)


@pytest.mark.parametrize("bad", ["fast", "0.3", "0.3,abc", "0.3,0", "-1,2", "nan,1", "1,2,3"])
def test_bad_injected_value_is_one_clear_line(quiet_env, monkeypatch, bad):
    monkeypatch.setenv(ENV, bad)
    with pytest.raises(ConfigError) as err:
        resolve_dtype("auto", "cpu")
    assert str(err.value) == (f"{ENV}={bad!r}: expected faster, slower or the fp32,bf16 GEMM rates in TFLOP/s "
                              f"(e.g. 0.325,0.168); unset it to measure")
    # the run's validation refuses it before any rank starts
    with pytest.raises(ConfigError, match=f"^{ENV}="):
        tiny(quiet_env / "run", "precision.dtype=auto").validate(1)


def test_bad_injected_value_from_the_command_line(quiet_env, monkeypatch, capsys):
    from megazoo.cli import main

    monkeypatch.setenv(ENV, "fast")
    assert main(["train", "gpt-tiny", "--set", "precision.dtype=bf16", f"log.dir={quiet_env / 'run'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"megazoo train: error: {ENV}='fast': expected faster, slower or the fp32,bf16 GEMM rates in "
                   f"TFLOP/s (e.g. 0.325,0.168); unset it to measure"]
    assert not (quiet_env / "run").exists()


# the measured probe and its cache ------------------------------------------------------------------
class CountingTimer:
    """Stands in for flops.gemm_flops: fixed rates, counts its calls."""

    def __init__(self, fp32: float, bf16: float):
        self.rates = {torch.float32: fp32 * 1e12, torch.bfloat16: bf16 * 1e12}
        self.calls: list[tuple] = []

    def __call__(self, dtype, device="cpu", threads=None, size=1024, seconds=0.4):
        self.calls.append((dtype, threads, size))
        return self.rates[dtype] * (0.9 if size != 1024 else 1.0)


def no_amx(monkeypatch, model: str = "Test CPU 9000"):
    monkeypatch.setattr(precision_probe, "cpu_facts", lambda: (model, frozenset({"avx512_bf16"})))


def test_measured_once_then_cached(quiet_env, monkeypatch):
    timer = CountingTimer(fp32=0.325, bf16=0.168)
    monkeypatch.setattr(flops, "gemm_flops", timer)
    no_amx(monkeypatch)
    with one_thread():
        first = probe("cpu")
        assert first.source == "measured" and not first.faster
        assert (first.fp32_tflops, first.bf16_tflops) == (0.325, 0.168)  # the best of the two sizes
        assert len(timer.calls) == 4 and {c[1] for c in timer.calls} == {1}  # 2 dtypes x 2 sizes, the run's threads
        files = list((quiet_env / "cache" / "precision").glob("*.json"))
        assert len(files) == 1
        written = files[0].stat().st_mtime_ns
        second = probe("cpu")
        assert second.source == "cached" and len(timer.calls) == 4  # no second measurement
        assert (second.fp32_tflops, second.bf16_tflops) == (0.325, 0.168)
        chosen, line = resolve_dtype("auto", "cpu")
        assert chosen == "fp32" and len(timer.calls) == 4
        assert line == ("precision.dtype=auto picks fp32: bf16 GEMMs run 0.52x fp32 on this CPU (0.168 vs 0.325 "
                        "TFLOP/s; cached: Test CPU 9000, 1 thread)")
        assert files[0].stat().st_mtime_ns == written  # read, not written again
    # another thread count is another key: measured again, in a second file
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert probe("cpu").source == "measured" and len(timer.calls) == 8
    finally:
        torch.set_num_threads(old)
    assert len(list((quiet_env / "cache" / "precision").glob("*.json"))) == 2


def test_a_damaged_cache_file_is_measured_again(quiet_env, monkeypatch):
    timer = CountingTimer(fp32=0.1, bf16=0.4)
    monkeypatch.setattr(flops, "gemm_flops", timer)
    no_amx(monkeypatch)
    assert probe("cpu").source == "measured"
    (path,) = (quiet_env / "cache" / "precision").glob("*.json")
    path.write_text("{not json")
    again = probe("cpu")
    assert again.source == "measured" and again.faster and len(timer.calls) == 8
    assert probe("cpu").source == "cached"


def test_amx_decides_without_measuring(quiet_env, monkeypatch):
    timer = CountingTimer(fp32=1.0, bf16=0.5)  # would say slower, were it asked
    monkeypatch.setattr(flops, "gemm_flops", timer)
    monkeypatch.setattr(precision_probe, "cpu_facts",
                        lambda: ("Sapphire", frozenset({"avx512_bf16", "amx_bf16", "amx_tile"})))
    result = probe("cpu")
    assert (result.source, result.faster, timer.calls) == ("features", True, [])
    assert math.isnan(result.ratio)
    assert resolve_dtype("auto", "cpu") == ("bf16", "precision.dtype=auto picks bf16: the CPU has AMX (amx_bf16 + "
                                                    "amx_tile)")


@pytest.mark.parametrize("capability, chosen", [((9, 0), "bf16"), ((8, 0), "bf16"), ((7, 5), "fp32")])
def test_cuda_decides_by_capability(quiet_env, monkeypatch, capability, chosen):
    timer = CountingTimer(fp32=1.0, bf16=0.5)
    monkeypatch.setattr(flops, "gemm_flops", timer)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    got, line = resolve_dtype("auto", torch.device("cuda", 0))
    assert got == chosen and timer.calls == []
    assert line.startswith(f"precision.dtype=auto picks {chosen}: CUDA sm{capability[0]}{capability[1]} has ")


# through a real (tiny) run -------------------------------------------------------------------------
def _train(run_dir, *overrides):
    cfg = tiny(run_dir, "train.steps=2", "train.global_batch=4", *overrides)
    with one_thread():
        trainer = Trainer(cfg)
        try:
            trainer.fit()
            dtypes = {p.dtype for c in trainer.chunks for p in c.parameters()}
        finally:
            trainer.close()
    return cfg, dtypes


@pytest.mark.parametrize("injected, chosen, dtype", [("slower", "fp32", torch.float32),
                                                     ("faster", "bf16", torch.bfloat16)])
def test_auto_run_trains_in_the_faster_dtype_and_says_why(quiet_env, monkeypatch, capsys, injected, chosen, dtype):
    monkeypatch.setenv(ENV, injected)
    run = quiet_env / "run"
    cfg, dtypes = _train(run, "precision.dtype=auto")
    assert cfg.precision.dtype == chosen and dtypes == {dtype}
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["precision"]["dtype"] == chosen  # what the weights were trained in
    line = (f"precision.dtype=auto picks {chosen}: bf16 GEMMs run {injected} than fp32 on this CPU "
            f"(env: {ENV}={injected})")
    assert capsys.readouterr().err.count(line) == 1
    assert f"precision    {line}" in (run / "summary.txt").read_text().splitlines()


def test_explicit_bf16_run_warns_once_even_quiet(quiet_env, monkeypatch, capsys):
    monkeypatch.setenv(ENV, SLOW_PAIR)
    monkeypatch.setenv(VERBOSITY, "-1")  # -q: information lines go, warnings stay
    cfg, dtypes = _train(quiet_env / "slow", "precision.dtype=bf16")
    assert cfg.precision.dtype == "bf16" and dtypes == {torch.bfloat16}
    err = capsys.readouterr().err
    assert err.splitlines().count(WARNING) == 1 and "precision.dtype=auto picks" not in err.replace(WARNING, "")
    _train(quiet_env / "auto", "precision.dtype=auto")  # the auto line is information: not under -q
    assert "precision.dtype" not in capsys.readouterr().err
    monkeypatch.setenv(ENV, "faster")
    monkeypatch.delenv(VERBOSITY)
    _train(quiet_env / "fast", "precision.dtype=bf16")
    assert "precision.dtype" not in capsys.readouterr().err  # no warning where bf16 is faster


# ranks agree ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rank", [0, 1])
def test_ranks_take_rank_zeros_choice(quiet_env, monkeypatch, rank):
    """Rank 0 decides and broadcasts; another rank probes nothing and takes what it is sent."""
    import torch.distributed as dist

    sent = []

    def broadcast(box, src=0, device=None):  # rank 0's choice, as the real collective would deliver it
        assert src == 0 and device is None and len(box) == 1
        if rank == 0:
            sent.append(box[0])
        else:
            box[0] = "bf16"

    monkeypatch.setattr(dist, "broadcast_object_list", broadcast)
    monkeypatch.setenv(ENV, "faster" if rank == 0 else "nonsense")  # "nonsense" raises, were rank 1 to probe
    cfg = tiny(quiet_env / "run", "precision.dtype=auto")
    line, warning = settle(cfg, torch.device("cpu"), rank, 2)
    assert cfg.precision.dtype == "bf16" and not warning
    if rank == 0:
        assert sent == ["bf16"] and line.startswith("precision.dtype=auto picks bf16: ")
    else:
        assert line is None


def test_dry_run_shows_the_pick(quiet_env, monkeypatch, capsys):
    from megazoo.cli import main

    monkeypatch.setenv(ENV, "faster")
    assert main(["train", "gpt-tiny", "--dry-run", "--set", "precision.dtype=auto", f"log.dir={quiet_env / 'run'}"]) == 0
    out = capsys.readouterr().out
    assert yaml.safe_load(out.split("\nlayout:")[0])["precision"]["dtype"] == "bf16"
    assert f"precision.dtype=auto picks bf16: bf16 GEMMs run faster than fp32 on this CPU (env: {ENV}=faster)" \
        in out.splitlines()
