"""RACE on the core trainer with a tiny random BERT: `megazoo task race train` in one process,
tp2 x pp2 equal to it (fp32, 1e-5) and running in bf16 (one 4-rank spawn), a resumed run equal to
an uninterrupted one, the trainer's metrics lines, and the evaluate / ensemble stages (their two
files, and predictions that give the in-training validation of the same checkpoint)."""

import json
import math
import os
import shutil
from pathlib import Path

import pytest
import torch

from megazoo.cli import main as megazoo
from megazoo.core.checkpoint.storage import update_latest
from megazoo.core.parallel.launch import spawn
from tests.evaluation_shape import check_evaluation

# MFU needs a peak; measuring it costs a second per run, which tests do not need
os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")

FIXTURE = Path(__file__).parent / "fixtures" / "race" / "RACE"
TOL = 1e-5


def make_tiny_bert(path: Path) -> str:
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.bert import BertModel, megatron_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = megatron_bert(num_layers=2, hidden_size=32, num_heads=4, vocab_size=30522, seq_length=96,
                        add_lm_head=True, add_binary_head=True)  # heads RACE must drop on load
    model = BertModel(cfg).initialize(11)
    save_full_model_state(path, gather_full_state(model), {"arch": "bert", "model": cfg.to_dict()})
    return str(path)


def overrides(run_dir, init, *extra: str) -> list[str]:
    """4 steps (2 epochs of the fixture's 4 training questions, 2 micro-batches of 1 question),
    validation and a checkpoint every 2 steps. No dropout: the runs of every layout then agree."""
    return [f"train.init_from={init}", f"data.path={FIXTURE}", "task.max_seq_length=64", "task.max_qa_length=24",
            "train.epochs=2", "train.micro_batch=1", "train.global_batch=2", "train.lr=1e-3", "train.log_interval=1",
            "train.eval_interval=2", "model.dropout=0.0", "model.attention_dropout=0.0", "log.progress=false",
            "log.plot=false", "checkpoint.interval=2", "checkpoint.keep=2", f"log.dir={run_dir}", *extra]


def metrics(run_dir) -> list[dict]:
    return [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]


def losses(run_dir) -> list[float]:
    return [r["loss"] for r in metrics(run_dir) if r.get("split") != "valid"]


def final_valid(run_dir) -> dict:
    return [r for r in metrics(run_dir) if r.get("split") == "valid"][-1]


def finetune(run_dir, init, *extra: str) -> None:
    assert megazoo(["task", "race", "train", "race", "--set", *overrides(run_dir, init, *extra)]) == 0


def four_rank_runs(init: str, root: str) -> dict:
    """Rank function: the fp32 and bf16 runs at tp2 x pp2 (the recipe loaded as the stage loads it)."""
    from megazoo.core.train.trainer import train
    from megazoo.tasks.race.cli import STAGES

    out = {}
    for name, extra in (("fp32", []), ("bf16", ["precision.dtype=bf16"])):
        cfg = STAGES["train"].load("race", overrides(f"{root}/{name}", init, "parallel.tp=2", "parallel.pp=2", *extra))
        summary = train(cfg)
        out[name] = {"losses": summary["losses"], "valid": summary["valid"]}
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("race")
    init = make_tiny_bert(root / "tiny")
    finetune(root / "single", init)
    multi = spawn(four_rank_runs, 4, init, str(root), timeout=400)
    return root, init, multi


def test_tp2_pp2_matches_one_process_and_bf16_runs(runs):
    root, _, multi = runs
    ref, ref_valid = losses(root / "single"), final_valid(root / "single")
    assert len(ref) == 4 and ref[-1] != ref[0]  # it trains
    for rank, per_rank in enumerate(multi):
        got = per_rank["fp32"]
        diff = max(abs(a - b) for a, b in zip(got["losses"], ref))
        assert len(got["losses"]) == 4 and diff <= TOL, f"rank {rank}: losses differ by {diff:.2e}"
        assert abs(got["valid"]["loss"] - ref_valid["loss"]) <= TOL
        for key in ("accuracy", "accuracy_middle", "accuracy_high"):
            assert got["valid"][key] == ref_valid[key], key
        bf16 = per_rank["bf16"]
        assert len(bf16["losses"]) == 4 and all(math.isfinite(x) for x in bf16["losses"])
        assert math.isfinite(bf16["valid"]["loss"]) and 0 <= bf16["valid"]["accuracy"] <= 1
    assert "bf16" in (root / "bf16" / "config.yaml").read_text()


def test_metrics_lines_and_checkpoints(runs):
    from megazoo.core.checkpoint import load_full_model_state

    root, _, _ = runs
    lines = metrics(root / "single")
    train_lines = [r for r in lines if r.get("split") != "valid"]
    assert [r["step"] for r in train_lines] == [1, 2, 3, 4]
    assert all(r["tokens_per_s"] > 0 and r["mfu"] > 0 and "consumed_tokens" in r for r in train_lines)
    valid = [r for r in lines if r.get("split") == "valid"]
    assert [r["step"] for r in valid] == [2, 4]
    assert all({"loss", "accuracy", "accuracy_middle", "accuracy_high"} <= set(r) for r in valid)
    ckpts = root / "single" / "checkpoints"
    assert sorted(p.name for p in ckpts.glob("iter_*")) == ["iter_0000002", "iter_0000004"]
    best = json.loads((ckpts / "best" / "best.json").read_text())
    assert best["metric"] == "accuracy" and best["value"] == max(r["accuracy"] for r in valid)
    info, state = load_full_model_state(ckpts)
    assert info["meta"]["task"]["name"] == "race" and info["meta"]["task"]["max_seq_length"] == 64
    assert "task_head.classifier.weight" in state and not any(k.startswith(("lm_", "binary_head")) for k in state)


def test_a_resumed_run_equals_an_uninterrupted_one(runs, capsys):
    """A copy of the run as a crash after its step-2 checkpoint leaves it, run again: it resumes
    there (checkpoint.resume=auto), and its steps 3 and 4 are the uninterrupted run's."""
    root, init, _ = runs
    run = root / "resumed"
    shutil.copytree(root / "single", run)
    shutil.rmtree(run / "checkpoints" / "iter_0000004")
    update_latest(run / "checkpoints", run / "checkpoints" / "iter_0000002")  # what that crash leaves
    capsys.readouterr()
    finetune(run, init)
    assert "resumed from" in capsys.readouterr().err
    assert [r["step"] for r in metrics(run) if r.get("split") != "valid"] == [1, 2, 3, 4]
    assert losses(run) == pytest.approx(losses(root / "single"), abs=1e-6)
    assert final_valid(run)["loss"] == pytest.approx(final_valid(root / "single")["loss"], abs=1e-6)


def jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_evaluate_gives_the_in_training_validation_and_ensembles(runs, capsys):
    root, _, _ = runs
    out = root / "eval"
    a = out / "single.json"
    assert megazoo(["task", "race", "evaluate", "--data", str(FIXTURE), "--split", "dev", "--checkpoint",
                    str(root / "single" / "checkpoints"), "--out", str(a)]) == 0
    summary = check_evaluation(a, "race")
    assert summary["task"] == "race" and summary["split"] == "dev" and summary["n"] == 2
    assert summary["checkpoint"].endswith("iter_0000004") and summary["predictions"] == "single.predictions.jsonl"
    valid = final_valid(root / "single")  # step 4: the weights of iter_0000004, on the whole dev split
    assert summary["metrics"] == {k: valid[k] for k in ("accuracy", "accuracy_middle", "accuracy_high")}
    preds = jsonl(out / "single.predictions.jsonl")
    loss = sum(-math.log(r["probs"][r["label"]]) for r in preds) / len(preds)
    assert abs(loss - valid["loss"]) <= TOL  # the same probabilities as the trainer's validation
    # the tp2 x pp2 run's best checkpoint, and the ensemble of the two (either file of a pair)
    b = out / "tp2pp2-best.json"
    best = json.loads((root / "fp32" / "checkpoints" / "best" / "best.json").read_text())
    assert megazoo(["task", "race", "evaluate", "--data", str(FIXTURE), "--split", "dev", "--checkpoint",
                    str(root / "fp32" / "checkpoints" / "best"), "--out", str(b)]) == 0
    assert json.loads(b.read_text())["step"] == best["step"]
    assert "accuracy: overall" in capsys.readouterr().out
    ens = out / "ensemble.json"
    assert megazoo(["task", "race", "ensemble", str(a), str(out / "tp2pp2-best.predictions.jsonl"),
                    "--out", str(ens)]) == 0
    assert "ensemble of 2: accuracy: overall" in capsys.readouterr().out
    e = check_evaluation(ens, "race")
    assert e["n"] == 2 and set(e["metrics"]) == {"accuracy", "accuracy_middle", "accuracy_high"}
    members = [jsonl(out / f"{n}.predictions.jsonl") for n in ("single", "tp2pp2-best")]
    rows = jsonl(out / "ensemble.predictions.jsonl")
    for i, row in enumerate(rows):
        avg = [(x + y) / 2 for x, y in zip(members[0][i]["probs"], members[1][i]["probs"])]
        assert row["probs"] == pytest.approx(avg, abs=1e-12)
    sums = torch.tensor([r["probs"] for r in rows], dtype=torch.float64).sum(-1)
    assert torch.allclose(sums, torch.ones_like(sums))
