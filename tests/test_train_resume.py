"""The trainer's state_dict round-trips the whole training state: a run stopped at step 6, saved and
resumed into the same run directory continues exactly as if it had never stopped."""

import pytest
import torch

from megazoo.core.checkpoint import load_checkpoint, load_full_model_state

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


def test_async_saves_equal_sync_saves(tmp_path):
    """checkpoint.async_save: training goes on while a background thread writes; the losses, the
    checkpoints kept and every saved tensor (model, Adam moments, schedule) equal the synchronous
    saves, and the run resumes from them."""
    extra = ["checkpoint.save=true", "checkpoint.interval=3", "checkpoint.keep=2"]
    runs = run_cases({"sync": tiny(tmp_path / "sync", *extra),
                      "async": tiny(tmp_path / "async", *extra, "checkpoint.async_save=true")})
    assert runs["async"]["losses"] == runs["sync"]["losses"]
    names = {m: sorted(p.name for p in (tmp_path / m / "checkpoints").glob("iter_*")) for m in runs}
    assert names["async"] == names["sync"] == ["iter_0000009", "iter_0000010"]
    assert not list((tmp_path / "async" / "checkpoints").glob("*.tmp"))
    with one_thread():
        t = Trainer(tiny(tmp_path / "probe"))
        try:
            for step in (9, 10):
                got = []
                for m in ("sync", "async"):  # loading fills the template's tensors in place: copy them out
                    state, _ = load_checkpoint(tmp_path / m / "checkpoints" / f"iter_{step:07d}", t.state_dict(),
                                               t.ctx)
                    got.append({"step": state["step"], "scheduler": state["scheduler"],
                                **{k: {n: v.tensor.clone() for n, v in state["optimizer"][k].items()}
                                   for k in ("exp_avg", "exp_avg_sq")}})
                assert got[0]["step"] == got[1]["step"] == step
                assert got[0]["scheduler"] == got[1]["scheduler"]
                for kind in ("exp_avg", "exp_avg_sq"):
                    assert got[0][kind].keys() == got[1][kind].keys()
                    for name, a in got[0][kind].items():
                        assert a.abs().sum() > 0, (step, kind, name)  # trained moments, not the zeros
                        assert torch.equal(a, got[1][kind][name]), (step, kind, name)
        finally:
            t.close()
    _, a = load_full_model_state(tmp_path / "async" / "checkpoints")
    for name, p in runs["sync"]["params"].items():
        assert torch.equal(a[name].float(), p), name


def _main_weights(trainer) -> dict:
    """name -> this (single) rank's fp32 main weights, shaped like the parameter."""
    from megazoo.core.checkpoint import named_parameters

    names = {id(p): n for n, p in named_parameters(trainer.chunks).items()}
    return {names[id(f.param)]: f.main.detach().reshape(f.param.shape).clone() for f in trainer.optimizer.fragments}


def _params(trainer) -> dict:
    from megazoo.core.checkpoint import named_parameters

    return {n: p.detach().clone() for n, p in named_parameters(trainer.chunks).items()}


def test_resume_in_another_precision_takes_the_fp32_weights(tmp_path):
    """fp32 -> bf16: the checkpoint's fp32 model becomes the main weights (the bf16 model is their
    rounding); bf16 -> fp32: its fp32 main weights become the model; bf16 -> fp16: main weights
    kept, loss scaler fresh. Adam moments, schedule and progress come along; training continues."""
    with one_thread():
        fp32 = Trainer(tiny(tmp_path / "fp32", "checkpoint.save=true"))
        for _ in range(4):
            fp32.train_step(fp32.train_data.step(fp32.consumed_samples))
        fp32.save()
        want = _params(fp32)
        fp32.close()
        low = Trainer(tiny(tmp_path / "fp32", "precision.dtype=bf16", "checkpoint.resume=auto"))
        try:
            assert low.step == 4 and low.consumed_samples == 32
            main, model = _main_weights(low), _params(low)
            assert main.keys() == want.keys()
            for name, w in want.items():
                assert torch.equal(main[name], w), name
                assert model[name].dtype == torch.bfloat16 and torch.equal(model[name], w.to(torch.bfloat16)), name
            out = [low.train_step(low.train_data.step(low.consumed_samples))["loss"] for _ in range(2)]
            assert all(0 < x < 10 for x in out)
            low.save()
            saved_main = _main_weights(low)
        finally:
            low.close()
        back = Trainer(tiny(tmp_path / "fp32", "checkpoint.resume=auto"))  # bf16 -> fp32
        try:
            assert back.step == 6
            got = _params(back)
            for name, w in saved_main.items():
                assert got[name].dtype == torch.float32 and torch.equal(got[name], w), name
        finally:
            back.close()
        fp16 = Trainer(tiny(tmp_path / "fp32", "precision.dtype=fp16", "checkpoint.resume=auto"))  # bf16 -> fp16
        try:
            main = _main_weights(fp16)
            for name, w in saved_main.items():
                assert torch.equal(main[name], w), name
            assert fp16.scaler.scale == fp16.cfg.precision.initial_scale
        finally:
            fp16.close()
