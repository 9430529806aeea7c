"""SGEAT training (task detox) on a tiny GPT: continued pretraining on a .bin/.idx of kept samples with the
validation perplexity on a second corpus; adapters only leaves every pretrained weight bit-equal;
the task's keys are checked."""

from __future__ import annotations

import pytest
import torch

from megazoo.core.checkpoint import named_parameters
from megazoo.core.data.preprocess import preprocess
from megazoo.core.train import Trainer
from megazoo.core.train.config import ConfigError
from tests.train_cases import metrics, one_thread, tiny

TRAIN_TEXT = "The module reads configuration files and returns a dictionary of the sections it found."
VALID_TEXT = "Zebras graze quietly near the river bank at dawn."


def corpus(path, text: str, n: int = 40):
    path.write_text("".join(f'{{"text": "{text} {i}"}}\n' for i in range(n)))
    preprocess([str(path)], "gpt2", str(path.with_suffix("")), append_eod=True, progress=False)
    return str(path.with_suffix(""))


@pytest.fixture(autouse=True)
def single_thread():
    with one_thread():  # tiny matrices: a second thread only spins on a shared machine
        yield


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("detox-data")
    return corpus(d / "kept.jsonl", TRAIN_TEXT), corpus(d / "pretraining.jsonl", VALID_TEXT)


def detox(run_dir, kept, valid, *extra):
    return tiny(run_dir, "task.name=detox", f"task.valid_path={valid}", "task.valid_samples=8", "task.valid_split=50,50,0",
                "data.synthetic=false",
                f"data.path={kept}", "model.vocab_size=50304", "train.steps=2", "train.decay=constant",
                "train.lr=2e-5", "train.min_lr=2e-5", "train.eval_interval=1", *extra)


def test_validation_perplexity_is_on_the_second_corpus(tmp_path, data):
    kept, valid = data
    trainer = Trainer(detox(tmp_path / "full", kept, valid))
    try:
        from megazoo.core.data import build_tokenizer

        tok = build_tokenizer("gpt2")
        words = {t for i in range(40) for t in tok.encode(f"{VALID_TEXT} {i}")} | {tok.eod}
        train_words = set(tok.encode(TRAIN_TEXT))
        tokens = {int(t) for i in range(8) for t in trainer.valid_data.source.get(i)[0]}
        assert tokens <= words and not tokens & (train_words - words)
        assert len(trainer.valid_data.source) == 8
        trainer.fit()
    finally:
        trainer.close()
    valid_lines = [r for r in metrics(tmp_path / "full") if r.get("split") == "valid"]
    assert [r["step"] for r in valid_lines][:2] == [1, 2] and all(r["ppl"] > 1 for r in valid_lines)


def test_adapters_only_keeps_the_pretrained_weights(tmp_path, data):
    kept, valid = data
    trainer = Trainer(detox(tmp_path / "ad", kept, valid, "model.adapter_size=8", 'train.trainable=["*adapter*"]',
                            "train.lr=1e-2", "train.min_lr=1e-2"))
    try:
        before = {n: p.detach().clone() for n, p in named_parameters(trainer.chunks).items()}
        trainer.fit()
        after = {n: p.detach().clone() for n, p in named_parameters(trainer.chunks).items()}
    finally:
        trainer.close()
    frozen = [n for n in before if "adapter" not in n]
    assert frozen and all(torch.equal(before[n], after[n]) for n in frozen)
    assert any(not torch.equal(before[n], after[n]) for n in before if "adapter" in n)


def test_task_keys_are_checked(tmp_path, data):
    kept, valid = data
    with pytest.raises(ConfigError, match="task.valid_pth.*task.valid_path"):
        Trainer(detox(tmp_path / "a", kept, valid, "task.valid_pth=x"))
    with pytest.raises(ConfigError, match="task.seq_length=16 needs rotary positions"):
        Trainer(detox(tmp_path / "b", kept, valid, "task.seq_length=16"))
