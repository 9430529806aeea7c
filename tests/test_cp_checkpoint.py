"""Checkpoints reshard across context parallelism: weights are replicated over the cp ranks, so a
checkpoint saved at cp 2 continues at cp 1 and one saved at cp 1 continues at cp 2, each equal to
the uninterrupted run (1e-5); the saved layout names cp."""

import json
from pathlib import Path

import pytest

from megazoo.core.parallel.launch import spawn
from megazoo.core.train import Trainer
from tests.train_cases import run_cases, tiny

PRE, STEPS = 2, 4


def _cfg(run_dir, cp: int, *extra: str):
    return tiny(run_dir, f"train.steps={STEPS}", f"parallel.cp={cp}", *extra)


def _fit(cfg) -> list[float]:
    t = Trainer(cfg)
    try:
        return t.fit()["losses"]
    finally:
        t.close()


def _cp2_ranks(root: str) -> dict:
    """cp 2: the uninterrupted run saving at step PRE, and the cp 1 checkpoint continued at cp 2."""
    root = Path(root)
    ref = _fit(_cfg(root / "cp2", 2, "checkpoint.save=true", f"checkpoint.interval={PRE}"))
    resumed = _fit(_cfg(root / "from-cp1", 2, f"checkpoint.resume={root / 'cp1' / 'checkpoints' / f'iter_{PRE:07d}'}"))
    return {"ref": ref, "resumed": resumed}


def test_checkpoints_reshard_between_cp2_and_cp1(tmp_path):
    cp1 = run_cases({"a": _cfg(tmp_path / "cp1", 1, "checkpoint.save=true", f"checkpoint.interval={PRE}")})["a"]
    cp2 = spawn(_cp2_ranks, 2, str(tmp_path), timeout=400)[0]
    ckpt = tmp_path / "cp2" / "checkpoints" / f"iter_{PRE:07d}"
    layout = json.loads(next(p for p in ckpt.rglob("*.json") if "layout" in p.read_text()).read_text())["layout"]
    assert layout["cp"] == 2
    back = run_cases({"b": _cfg(tmp_path / "back", 1, f"checkpoint.resume={ckpt}")})["b"]["losses"]
    assert len(cp1["losses"]) == len(cp2["ref"]) == STEPS
    assert cp2["ref"] == pytest.approx(cp1["losses"], abs=1e-5, rel=0)
    for name, got, ref in (("cp2 -> cp1", back, cp2["ref"]), ("cp1 -> cp2", cp2["resumed"], cp1["losses"])):
        assert got[:PRE] == ref[:PRE], name  # the restored history
        assert got[PRE:] == pytest.approx(ref[PRE:], abs=1e-5, rel=0), name
