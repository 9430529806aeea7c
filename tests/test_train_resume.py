"""The trainer's state_dict round-trips the whole training state: a run stopped at step 6, saved and
resumed into the same run directory continues exactly as if it had never stopped."""

import pytest
import torch

from megazoo.core.checkpoint import CheckpointError

from megazoo.core.train import Trainer
from tests.train_cases import metrics, one_thread, run_cases, tiny


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_resume_continues_bit_for_bit(tmp_path, dtype):
    extra = [f"precision.dtype={dtype}", "model.dropout=0.1"]  # dropout: the RNG streams must resume too
    straight = run_cases({"a": tiny(tmp_path / "straight", *extra)})["a"]
    run = tmp_path / "resumed"
    with one_thread():
        first = Trainer(tiny(run, *extra, "checkpoint.save=true"))
        for _ in range(6):
            first.train_step(first.train_data.step(first.consumed_samples))
        first.save()
        first.close()
        assert (run / "checkpoints" / "latest").read_text().strip() == "iter_0000006"
    resumed = run_cases({"b": tiny(run, *extra, "checkpoint.save=true", "checkpoint.resume=auto")})["b"]
    assert resumed["losses"] == straight["losses"]
    for name, p in straight["params"].items():
        assert torch.equal(resumed["params"][name], p), name
    # the resumed run appended its steps 7..10 to the run directory's metrics.jsonl
    assert [r["step"] for r in metrics(run) if r.get("split") != "valid"] == [7, 8, 9, 10]
    assert sorted(p.name for p in (run / "checkpoints").glob("iter_*")) == ["iter_0000006", "iter_0000010"]


def test_resume_refuses_another_model(tmp_path):
    with one_thread():
        t = Trainer(tiny(tmp_path, "checkpoint.save=true"))
        t.save()
        t.close()
        with pytest.raises(CheckpointError, match=r"saved for another model: model.hidden_size=.*set model.hidden_size"):
            Trainer(tiny(tmp_path, "checkpoint.resume=auto", "model.hidden_size=32"))
