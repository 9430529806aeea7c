"""bench/bench_train.py's load rule: --write is refused, in one line with exit code 2, when the
1-minute load average is above its limit at the start or at the end; the load is injected."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _no_work(name, out):
    raise AssertionError(f"the benchmark started its {name!r} worker; the guard should have stopped it")


@pytest.fixture
def bench(monkeypatch):
    """bench/bench_train.py as a module (it imports bench/results.py by its plain name), removed
    from sys.modules afterwards with what it brought."""
    monkeypatch.setenv("MEGAZOO_PEAK_TFLOPS", "1")  # the module sets it; monkeypatch restores it
    monkeypatch.delenv("MEGAZOO_BENCH_SMOKE", raising=False)
    monkeypatch.syspath_prepend(str(BENCH))
    before = set(sys.modules)
    spec = importlib.util.spec_from_file_location("bench_train_under_test", BENCH / "bench_train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "run_worker", _no_work)  # a guard that lets the run start fails here, fast
    yield module
    for name in set(sys.modules) - before:
        if name in ("results", "mcore_shim"):
            del sys.modules[name]


def test_limits_leave_room_for_the_bench_own_threads_at_the_end(bench):
    assert bench.load_limits(2) == {"start": 1.0, "end": bench.THREADS + 1.0}
    assert bench.load_limits(8) == {"start": 4.0, "end": bench.THREADS + 4.0}
    assert bench.load_refusal(1.0, "start", 2) is None  # at the limit: allowed
    assert bench.load_refusal(2.4, "end", 2) is None  # the bench's own 2 threads just ran
    assert bench.load_refusal(2.4, "start", 2) is not None  # nothing of the bench ran yet: someone else did


@pytest.mark.parametrize("when,load,limit", [("start", 1.3, "1.00"), ("end", 3.5, "3.00")])
def test_refusal_is_one_line_naming_the_load_limit_and_the_fix(bench, when, load, limit):
    message = bench.load_refusal(load, when, 2)
    assert "\n" not in message
    assert message.startswith("bench/bench_train.py: --write refused")
    assert f"at the {when} is {load:.2f}, above {limit}" in message
    assert "rerun when the machine is quiet, or without --write" in message


def test_busy_start_refuses_write_before_any_work(bench, capsys):
    code = bench.main(["--write", "--out", "/nonexistent-never-used"], loadavg=lambda: (4.2, 1.0, 1.0))
    out, err = capsys.readouterr()
    assert code == 2
    assert "load average (1 min) at the start: 4.20" in out
    assert "peak GEMM" not in out  # stopped before the first worker
    assert err.strip().count("\n") == 0 and "--write refused" in err and "Traceback" not in err


def test_missing_megatron_core_is_one_line_naming_the_asset_file(bench, monkeypatch, capsys):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "megatron" else find_spec(name, *a))
    code = bench.main(["--out", "/nonexistent-never-used"], loadavg=lambda: (0.0, 0.0, 0.0))
    out, err = capsys.readouterr()
    assert code == 2 and "peak GEMM" not in out
    assert err.strip().count("\n") == 0 and "requirements-assets.txt" in err and "--only megazoo" in err
