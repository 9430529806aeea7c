"""`megazoo train` end to end: --nproc starts ranks through torch's elastic launcher, torchrun works
too, and the run directory holds what DESIGN.md promises."""

import json
import os
import subprocess
import sys

import pytest

ARGS = ["gpt-tiny", "--set", "train.steps=3", "train.global_batch=8", "model.seq_length=32", "parallel.tp=2",
        "parallel.sp=true", "log.progress=false", "train.eval_iters=1"]


def _check_run_dir(run, out):
    assert out.returncode == 0, out.stderr[-3000:]
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in records if r.get("split") != "valid"]
    valid = [r for r in records if r.get("split") == "valid"]
    assert [r["step"] for r in train] == [1, 2, 3]
    for key in ("loss", "lr", "grad_norm", "tokens_per_s", "mfu", "consumed_tokens"):
        assert all(isinstance(r[key], (int, float)) for r in train), key
    assert valid and valid[-1]["ppl"] > 1
    for name in ("config.yaml", "loss.png", "summary.txt"):
        assert (run / name).is_file(), name
    assert (run / "checkpoints" / "latest").is_file()
    assert out.stdout.count("validation   loss") == 1  # rank 0 alone prints the summary
    assert "world 2 = tp 2 x pp 1 x dp 1, sp" in out.stdout


@pytest.mark.slow
def test_nproc_and_torchrun(tmp_path):
    env = dict(os.environ, MEGAZOO_PEAK_TFLOPS="1")
    run = tmp_path / "nproc"
    out = subprocess.run([sys.executable, "-m", "megazoo", "train", *ARGS, f"log.dir={run}", "--nproc", "2"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    _check_run_dir(run, out)
    import yaml

    resolved = yaml.safe_load((run / "config.yaml").read_text())
    assert resolved["parallel"]["tp"] == 2 and resolved["model"]["ffn_hidden_size"] == 256  # fully resolved
    run = tmp_path / "torchrun"
    out = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "megazoo",
                          "train", *ARGS, f"log.dir={run}"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    _check_run_dir(run, out)
