"""train.compile=true: torch.compile of the model chunks gives the same training run as eager at the
layouts of the trainer parity tests (tp, sp, pp, dp with the distributed optimizer, accumulation,
recompute). The tests use the aot_eager backend (dynamo + AOT autograd, the graphs inductor would
get, without its C++ compile, which takes minutes on 2 cores); bench/bench_train.py --compile times
inductor. Also: the config checks of the new keys."""

import pytest

from megazoo.core.parallel.launch import spawn
from megazoo.core.train.errors import ConfigError
from tests.test_train_parity import assert_same_run
from tests.train_cases import run_cases, tiny

COMPILE = ("train.compile=true", "train.compile_backend=aot_eager")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("ref")
    return run_cases({"big": tiny(root / "big", "train.micro_batch=8")})["big"]


def test_compiled_single_process_matches_eager(reference, tmp_path, monkeypatch):
    """Compiled with the explicit attention kernel (its cached causal bias traced too) against the
    eager SDPA reference."""
    from torch._dynamo.utils import counters

    monkeypatch.setenv("MEGAZOO_ATTENTION", "explicit")
    counters.clear()
    got = run_cases({"accumulate 4": tiny(tmp_path / "acc", "train.micro_batch=2", *COMPILE),
                     "selective recompute": tiny(tmp_path / "sel", "recompute=selective", *COMPILE)})
    for name, result in got.items():
        assert_same_run(result, reference, f"compiled, {name}")
    assert counters["stats"]["unique_graphs"] > 0, "the chunks were not compiled"


def _two_rank_cases(root: str) -> dict:
    return run_cases({
        "tp2 + sp": tiny(f"{root}/tp2", "parallel.tp=2", "parallel.sp=true", *COMPILE),
        "pp2": tiny(f"{root}/pp2", "parallel.pp=2", *COMPILE),
        "dp2, distributed optimizer": tiny(f"{root}/zero", "optim.distributed=true", *COMPILE),
    })


def test_compiled_two_ranks_match_eager(reference, tmp_path):
    for rank, per_rank in enumerate(spawn(_two_rank_cases, 2, str(tmp_path), timeout=600)):
        for name, result in per_rank.items():
            assert_same_run(result, reference, f"compiled {name} (rank {rank})", stage_only=name.startswith("pp2"))


def test_config_checks(tmp_path):
    with pytest.raises(ConfigError, match="train.allocator must be keep or system, got 'never'"):
        tiny(tmp_path, "train.allocator=never").validate(1)
    with pytest.raises(ConfigError, match="train.compile"):
        tiny(tmp_path, "train.compile=maybe")
    cfg = tiny(tmp_path)
    assert cfg.train.compile is False and cfg.train.allocator == "keep"
