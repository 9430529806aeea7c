"""The trainer on megazoo.core.checkpoint: a `megazoo train` run killed with SIGKILL resumes
bit-for-bit; a checkpoint saved at (tp=2, pp=2, dp=1) continues at other layouts (optimizer
state included) like the unchanged layout; the saved model is readable whole; bad checkpoints
give core/checkpoint's errors."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from megazoo.core.checkpoint import CheckpointError, load_full_model_state, named_parameters
from megazoo.core.parallel.launch import spawn
from megazoo.core.train import Trainer
from tests.train_cases import one_thread, run_cases, tiny

# ------------------------------------------------------------------------------------------------
# resume exactness through `python -m megazoo train`, with a real SIGKILL

RUN = ["gpt-tiny", "--set", "train.steps=20", "checkpoint.interval=5", "checkpoint.keep=2", "log.progress=false",
       "log.plot=false", "train.eval_iters=1", "model.dropout=0.1"]  # dropout: the RNG streams must resume too
PAUSE_AT = 12  # the killed run gets past its step-10 checkpoint, logs step 11 and does step 12
# the killed run: `megazoo train` whose trainer, after step PAUSE_AT, says so and blocks on stdin
PAUSING = f"""
import sys
from pathlib import Path
from megazoo.core.train.trainer import Trainer
step = Trainer.train_step
def paused(self, mbs):
    out = step(self, mbs)
    if self.step == {PAUSE_AT}:
        Path(sys.argv[1]).write_text("paused")
        sys.stdin.read()  # until killed
    return out
Trainer.train_step = paused
from megazoo.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _env() -> dict:
    env = dict(os.environ, MEGAZOO_PEAK_TFLOPS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    return env


def _train_cmd(run_dir: Path, *extra: str) -> list[str]:
    return ["train", *RUN, f"log.dir={run_dir}", *extra]


def _records(run_dir: Path) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("split", "train") == "train"]


def test_sigkill_and_resume_is_bitwise_exact(tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    marker = tmp_path / "paused"
    ref = subprocess.Popen([sys.executable, "-m", "megazoo", *_train_cmd(straight)], env=_env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first = subprocess.Popen([sys.executable, "-c", PAUSING, str(marker), *_train_cmd(killed)], env=_env(),
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():  # wait for the run to get there (it has saved iter_0000010 by then)
            assert first.poll() is None, f"the first run ended early: {first.stderr.read()}"
            assert time.monotonic() < deadline, "the first run never reached step 12"
            time.sleep(0.05)
        assert (killed / "checkpoints" / "iter_0000010" / "meta.json").is_file()
        os.kill(first.pid, signal.SIGKILL)
        assert first.wait(timeout=30) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
    assert [r["step"] for r in _records(killed)] == list(range(1, PAUSE_AT))
    resumed = subprocess.run([sys.executable, "-m", "megazoo", *_train_cmd(killed, "checkpoint.resume=auto")],
                             env=_env(), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert ref.wait(timeout=300) == 0, ref.stderr.read()
    got, want = _records(killed), _records(straight)
    # appended after step 10 (the line of step 11 the killed run logged is replaced), not overwritten
    assert [r["step"] for r in got] == list(range(1, 21))
    assert [r["loss"] for r in got] == [r["loss"] for r in want]  # bitwise
    assert len({r["loss"] for r in want}) == 20  # it really trains
    assert sorted(p.name for p in (killed / "checkpoints").glob("iter_*")) == ["iter_0000015", "iter_0000020"]
    # the whole model of the run, as the quickstart and export-hf read it
    info, full = load_full_model_state(killed / "checkpoints")
    _, ref_full = load_full_model_state(straight / "checkpoints")
    assert info["step"] == 20 and info["meta"]["arch"] == "gpt" and info["meta"]["model"]["hidden_size"] == 64
    assert info["meta"]["vocab_size"] == 512 and info["meta"]["tokenizer"]
    assert info["meta"]["model"]["dropout"] == 0.1  # the whole model config, not only its architecture
    assert full.keys() == ref_full.keys()
    for name, t in ref_full.items():
        assert torch.equal(full[name], t), name


# ------------------------------------------------------------------------------------------------
# resharding through the trainer

PRE, STEPS = 3, 6
RESHARD = ("model.dropout=0.0", f"train.steps={STEPS}", "train.warmup=2")


def _cfg(run_dir, tp: int, pp: int, *extra: str):
    return tiny(run_dir, *RESHARD, f"parallel.tp={tp}", f"parallel.pp={pp}", *extra)


def reshard_ranks(root: str) -> dict:
    """4 ranks: train at (2,2,1) saving at step 3 asynchronously (the reference continues to 6);
    then resume the step-3 checkpoint at (2,1,2) with the distributed optimizer."""
    root = Path(root)
    # the reference writes its checkpoints in the background (its own gloo group beside training's)
    ref = Trainer(_cfg(root / "ref", 2, 2, "checkpoint.save=true", f"checkpoint.interval={PRE}",
                       "checkpoint.async_save=true"))
    try:
        ref_losses = ref.fit()["losses"]
    finally:
        ref.close()
    ckpt = root / "ref" / "checkpoints" / f"iter_{PRE:07d}"
    t = Trainer(_cfg(root / "zero", 2, 1, "optim.distributed=true", f"checkpoint.resume={ckpt}"))
    try:
        assert t.step == PRE and t.consumed_samples == PRE * 8
        losses = t.fit()["losses"]
    finally:
        t.close()
    # the fp32 checkpoint continued in bf16 at (2,1,2) with ZeRO: its fp32 weights become the main weights
    low = Trainer(_cfg(root / "bf16", 2, 1, "optim.distributed=true", "precision.dtype=bf16",
                       f"checkpoint.resume={ckpt}"))
    try:
        bf16 = low.fit()["losses"]
    finally:
        low.close()
    return {"ref": ref_losses, (2, 1, 2): losses, "bf16": bf16}


def test_reshard_through_the_trainer(tmp_path):
    out = spawn(reshard_ranks, 4, str(tmp_path), timeout=400)[0]
    ref = out["ref"]
    assert len(ref) == STEPS and len(set(ref)) == STEPS
    ckpt = tmp_path / "ref" / "checkpoints" / f"iter_{PRE:07d}"
    single = run_cases({"a": _cfg(tmp_path / "single", 1, 1, f"checkpoint.resume={ckpt}")})["a"]
    for layout, losses in ((2, 1, 2), out[(2, 1, 2)]), ((1, 1, 1), single["losses"]):
        assert losses[:PRE] == ref[:PRE], layout  # the restored history
        assert losses[PRE:] == pytest.approx(ref[PRE:], abs=1e-5, rel=0), layout
    assert out["bf16"][:PRE] == ref[:PRE]
    # bf16 rounding moves the losses by ~1e-4; a fresh start would differ by ~2e-2 (5.70 vs 5.69)
    assert out["bf16"][PRE:] == pytest.approx(ref[PRE:], abs=2e-3, rel=0)
    # the resumed runs' metrics hold only their own steps
    assert [json.loads(x)["step"] for x in (tmp_path / "zero" / "metrics.jsonl").read_text().splitlines()
            if json.loads(x).get("split") != "valid"] == [4, 5, 6]
    # the (2,2,1) checkpoint read whole: the TP=1 weights of the real vocabulary
    info, full = load_full_model_state(tmp_path / "ref" / "checkpoints")
    assert info["meta"]["arch"] == "gpt" and info["meta"]["model"]["vocab_size"] == 300
    assert info["layout"]["tp"] == 2 and info["layout"]["pp"] == 2
    with one_thread():
        plain = Trainer(_cfg(tmp_path / "plain", 1, 1, f"checkpoint.resume={tmp_path / 'ref' / 'checkpoints'}"))
        try:
            mine = named_parameters(plain.chunks)
            assert mine.keys() == full.keys()
            for name, t in full.items():  # (the local table has vocabulary padding rows)
                assert torch.equal(mine[name].detach()[tuple(slice(0, n) for n in t.shape)], t), name
        finally:
            plain.close()


# ------------------------------------------------------------------------------------------------
# bad checkpoints

def test_another_architecture_size_vocabulary_or_tokenizer_is_refused(tmp_path):
    with one_thread():
        t = Trainer(tiny(tmp_path, "checkpoint.save=true"))
        t.save()
        t.close()
        with pytest.raises(CheckpointError, match=r"model.vocab_size=300 there, model.vocab_size=400 in this run"):
            Trainer(tiny(tmp_path, "checkpoint.resume=auto", "model.vocab_size=400"))
        with pytest.raises(CheckpointError, match=r"tokenizer='gpt2' there, tokenizer='other' in this run"):
            Trainer(tiny(tmp_path, "checkpoint.resume=auto", "data.tokenizer=other", "data.synthetic=true"))
        with pytest.raises(CheckpointError, match=r"saved for another model: model.hidden_size=.*set model.hidden_size"):
            Trainer(tiny(tmp_path, "checkpoint.resume=auto", "model.hidden_size=32"))
        with pytest.raises(CheckpointError,
                           match=r"saved for another model: arch='gpt' there, arch='llama' in this run"):
            Trainer(tiny(tmp_path, "checkpoint.resume=auto", "model.arch=llama"))
