"""RACE on the core trainer: `task: race` in a recipe (entry point megazoo.tasks:race).

The model is a BERT encoder with the multiple-choice head (zoo/heads, "choice"): each of a
question's 4 options is one sequence, the pooled [CLS] output gives one logit per option, and the
loss is the softmax cross-entropy over the 4 (Megatron's MultipleChoice). Weights come through
train.init_from (MiniLM imported, an HF BERT folder, a pretraining checkpoint; its masked-LM and
sentence-order heads are left out); everything else — layouts, precision, resume, logging, MFU —
is the trainer's.

Task keys (task.*): train_split (train), valid_split (dev), max_seq_length (512), max_qa_length
(128), eval_questions (0: the whole validation split; else an even spread of that many), and
generate / generate_seed / generate_articles / generate_words (write a RACE-format set generated
from the embedded corpus at data.path when it is missing). data.path is the RACE folder (original
layout or HF parquet/JSON) and data.tokenizer a megazoo tokenizer spec (BERT WordPiece).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from megazoo.core.train.config import ConfigError
from megazoo.core.train.rows import Rows, Shuffled
from megazoo.core.train.task_settings import TaskSettings
from megazoo.tasks.race.data import load_race
from megazoo.tasks.race.evaluate import race_accuracy, race_metrics
from megazoo.tasks.race.inputs import build_inputs
from megazoo.zoo.bert.task import HeadTaskBuilder
from megazoo.zoo.heads.choice import ChoiceBatch


@dataclass
class RaceTask(TaskSettings):
    NAME = "race"
    BOUNDS = {"max_seq_length": 3, "max_qa_length": 1}

    train_split: str = "train"
    valid_split: str = "dev"
    max_seq_length: int = 512
    max_qa_length: int = 128
    eval_questions: int = 0
    eval_batch: int = 8  # questions per forward pass in evaluation
    generate: bool = False
    generate_seed: int = 0
    generate_articles: int = 400  # training articles (dev and test get 15% each)
    generate_words: int = 80


class RaceBuilder(HeadTaskBuilder):
    def __init__(self, task: dict, model: dict, recompute: str = "none"):
        self.settings = RaceTask.from_dict(task)
        super().__init__(model, recompute, "task race fine-tunes a BERT encoder", "choice")
        self.valid: ChoiceBatch | None = None
        self.valid_levels: list[str] = []

    # data --------------------------------------------------------------------------------------
    def encode(self, folder, split: str | None, tokenizer, limit: int = 0) -> tuple[ChoiceBatch, list]:
        s = self.settings
        questions = load_race(folder, split)
        if limit and len(questions) > limit:  # evenly spread, so both levels and many articles are in
            questions = [questions[i * len(questions) // limit] for i in range(limit)]
        self.check_length()
        return build_inputs(questions, tokenizer, s.max_seq_length, s.max_qa_length), questions

    def check_data(self, data: dict) -> None:
        if not data.get("path"):
            raise ConfigError("task race needs data.path: a RACE folder (RACE/{train,dev,test}/{middle,high}/*.txt "
                              "or HF `race` parquet/JSON); or set task.generate=true to write a generated one there")
        if not Path(data["path"]).exists() and not self.settings.generate:
            raise ConfigError(f"data.path={data['path']!r}: no such RACE folder; give one, or set task.generate=true "
                              f"to write a generated set there (`megazoo task race data` does the same)")

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        self.check_data(data)
        self.ensure_data(Path(data["path"]))
        s = self.settings
        train, _ = self.encode(data["path"], s.train_split, tokenizer)
        self.valid, valid_q = self.encode(data["path"], s.valid_split, tokenizer, s.eval_questions)
        self.valid_levels = [q.level for q in valid_q]
        return Shuffled(Rows(train), seed), Rows(self.valid)

    def ensure_data(self, path: Path) -> None:
        """With task.generate, write the generated set at `path` unless it is there. The trainer
        calls data_sources on rank 0 before the other ranks, so one rank writes it."""
        s = self.settings
        if path.exists() or not s.generate:
            return
        from megazoo.core.fs import atomic_folder
        from megazoo.tasks.race.generate import generate_race

        held_out = max(2, int(s.generate_articles * 0.15))
        with atomic_folder(path) as tmp:  # a scratch folder of its own, moved into place only when complete
            generate_race(tmp, seed=s.generate_seed, article_words=s.generate_words,
                          articles={"train": s.generate_articles, "dev": held_out, "test": held_out})

    # metrics -------------------------------------------------------------------------------------
    def predict(self, chunks, ctx, inputs: ChoiceBatch, dtype=torch.float32, batch: int | None = None) -> torch.Tensor:
        """Softmax probabilities [N, 4] of every question, on every rank (collective)."""
        return torch.softmax(self.choice_scores(chunks, ctx, inputs, dtype, batch).double(), -1)

    def evaluate(self, chunks, ctx, dtype) -> dict:
        if self.valid is None or len(self.valid) == 0:
            return {}
        probs = self.predict(chunks, ctx, self.valid, dtype)
        return race_metrics(race_accuracy(probs.argmax(-1).tolist(), self.valid.labels.tolist(), self.valid_levels))


def build(task: dict, model: dict, recompute: str = "none") -> RaceBuilder:
    return RaceBuilder(task, model, recompute)
