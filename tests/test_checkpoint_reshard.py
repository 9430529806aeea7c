"""Resharding: a checkpoint saved at (tp=2, pp=2, dp=1) loads at (1,1,1), (4,1,2), (1,2,4) and (2,1,2),
with and without the distributed optimizer: same logits on a fixed batch (1e-6) and the same
continued training as the unchanged layout (1e-5)."""

from pathlib import Path

import pytest
import torch

from megazoo.core.checkpoint import architecture, load_checkpoint, save_checkpoint
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.launch import spawn
from tests.test_checkpoint_mini import MiniTrainer, build_ctx

PRE, POST = 3, 3


def _continue(tr: MiniTrainer) -> dict:
    logits = tr.logits()
    losses = [tr.train_step() for _ in range(POST)]
    return {"logits": logits, "losses": None if losses[0] is None else losses}


def _load(root: Path, tp: int, pp: int, zero: bool, ctx: ParallelContext | None = None) -> MiniTrainer:
    ctx = ctx or build_ctx(tp, pp)
    tr = MiniTrainer("gpt-tiny", ctx, zero=zero, seed=999)  # another init: everything must come from the file
    state, info = load_checkpoint(root, tr.state(), ctx, expect=architecture("gpt", tr.cfg.to_dict()))
    assert info["step"] == PRE and state["consumed_samples"] == PRE * 4 and not info["per_rank_restored"]
    tr.load_state(state)
    return tr


def reshard_4(root: str) -> dict:
    """(2,2,1): train, save, continue (the reference); then load at (2,1,2) with ZeRO-1, re-save
    that layout's state as a second checkpoint, continue."""
    root = Path(root)
    tr = MiniTrainer("gpt-tiny", build_ctx(2, 2))
    for _ in range(PRE):
        tr.train_step()
    save_checkpoint(root / "a", PRE, tr.state(), tr.ctx, tr.meta(), keep=2)
    out = {"ref": _continue(tr)}
    tr = _load(root / "a", 2, 1, zero=True)
    save_checkpoint(root / "b", PRE, tr.state(), tr.ctx, tr.meta())
    out[(2, 1, 2, True)] = _continue(tr)
    return out


def reshard_8(root: str) -> dict:
    root = Path(root)
    return {(tp, pp, 8 // (tp * pp), True): _continue(_load(root / "a", tp, pp, zero=True))
            for tp, pp in ((4, 1), (1, 2))}


def _merge(per_rank: list[dict]) -> dict:
    """Each layout's results from whichever rank had them (the last pipeline stage)."""
    out = {}
    for res in per_rank:
        for layout, got in res.items():
            slot = out.setdefault(layout, {"logits": None, "losses": None})
            for k in ("logits", "losses"):
                if got[k] is not None and slot[k] is None:
                    slot[k] = got[k]
    return out


def assert_close(a, b, tol, what):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    err = (a - b).abs().max().item()
    assert err <= tol * max(1.0, b.abs().max().item()), f"{what}: max abs difference {err:.3e}"


@pytest.mark.slow
def test_reshard_across_layouts(tmp_path):
    results = _merge(spawn(reshard_4, 4, str(tmp_path), timeout=600))
    ref = results.pop("ref")
    # (1,1,1) without the distributed optimizer, from the checkpoint the ZeRO (2,1,2) run re-saved
    results[(1, 1, 1, False)] = _continue(_load(tmp_path / "b", 1, 1, zero=False, ctx=ParallelContext.single()))
    results.update(_merge(spawn(reshard_8, 8, str(tmp_path), timeout=600)))
    assert set(results) == {(2, 1, 2, True), (1, 1, 1, False), (4, 1, 2, True), (1, 2, 4, True)}
    for layout, got in results.items():
        print(f"{layout}: logits max diff {(got['logits'] - ref['logits']).abs().max().item():.2e}, losses max diff "
              f"{max(abs(a - b) for a, b in zip(got['losses'], ref['losses'])):.2e}")
        assert_close(got["logits"], ref["logits"], 1e-6, f"logits at (tp, pp, dp, zero)={layout}")
        assert_close(got["losses"], ref["losses"], 1e-5, f"continued losses at {layout}")
