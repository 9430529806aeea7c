"""The span-head tasks of synthetic_qa on the core trainer: `task: synthetic_qa` in a recipe
(entry point megazoo.tasks:synthetic_qa), a BERT encoder with the span head (zoo/heads).

    task.kind  input                                   learns                      validation metrics
    qa         [CLS] question [SEP] window [SEP]       the answer span (SQuAD QA)  exact_match, f1 (v2: has_ans_*)
    answers    [CLS] [SEP] window [SEP] (no question)  spans worth asking about    answer_recall, answer_f1

data.path is the training file (SQuAD v1.1/v2.0 JSON); task.valid_file the validation file (by
default the package's hand-written dev set, data/dev.json). The inputs are SQuAD's (zoo/heads/qa.py
encode_qa: the question cut to max_query_length, windows every doc_stride tokens, targets at the
answer or [CLS] when a window does not hold it; an unanswerable v2.0 question targets [CLS]).
Decoding is BERT's n-best (decode.py), with v2.0's null answer when the file has impossible
questions. The answer extractor is trained on every (paragraph, answer) pair with the question
left empty and proposes the top `top_answers` spans of a paragraph.

Task keys: kind; valid_file; max_seq_length (384); doc_stride (128); max_query_length (64);
max_answer_length (30); n_best (20); null_threshold (0.0; v2: predict no answer when the null
score beats the best span by more); top_answers (answers: candidates per paragraph, 5);
eval_batch (32).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from megazoo.core.train.config import ConfigError
from megazoo.core.train.rows import Rows, Shuffled
from megazoo.core.train.task_settings import TaskSettings
from megazoo.tasks.synthetic_qa.decode import decode, encode
from megazoo.tasks.synthetic_qa.squad import read_squad
from megazoo.zoo.bert.task import HeadTaskBuilder, SpanWindows
from megazoo.zoo.heads import span_logits
from megazoo.zoo.heads.encoded import Encoded

KINDS = ("qa", "answers")
DEV = Path(__file__).parent / "data" / "dev.json"


@dataclass
class SyntheticQATask(SpanWindows, TaskSettings):
    NAME = "synthetic_qa"
    CHOICES = {"kind": KINDS}
    BOUNDS = {"max_seq_length": 8, "top_answers": 1, "eval_batch": 1}

    kind: str = "qa"
    valid_file: str = ""
    max_seq_length: int = 384
    null_threshold: float = 0.0
    top_answers: int = 5
    eval_batch: int = 32

    @property
    def valid_path(self) -> Path:
        return Path(self.valid_file) if self.valid_file else DEV


class SyntheticQABuilder(HeadTaskBuilder):
    def __init__(self, task: dict, model: dict, recompute: str = "none"):
        self.settings = SyntheticQATask.from_dict(task)
        super().__init__(model, recompute, "task synthetic_qa trains a BERT span model", "span", num_labels=2,
                         label_names=[], add_pooler=False)
        self.valid = None
        self.valid_questions: list = []
        self.valid_v2 = False

    # data --------------------------------------------------------------------------------------
    def read(self, path) -> tuple[list, bool]:
        """(questions as the model sees them, is v2.0) of a SQuAD file (answers: one per answer)."""
        f = read_squad(path)
        if self.settings.kind == "qa":
            return f.questions, f.v2
        from megazoo.tasks.synthetic_qa.decode import answer_examples

        return answer_examples(f), False

    def encode(self, questions: list, tokenizer) -> Encoded:
        s = self.settings
        self.check_length()
        return encode(questions, tokenizer, s.max_seq_length, s.doc_stride, s.max_query_length)

    def check_data(self, data: dict) -> None:
        path = data.get("path")
        if not path:
            raise ConfigError("task synthetic_qa needs data.path: a SQuAD-format JSON training file (`megazoo task "
                              "synthetic_qa data OUT_DIR` writes one; the filter stage writes kept.json)")
        for p in (path, self.settings.valid_path):
            if not Path(p).is_file():
                raise ConfigError(f"{p}: no such file (a SQuAD-format JSON)")
            try:
                read_squad(p)
            except ValueError as e:
                raise ConfigError(str(e)) from None

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        self.check_data(data)
        train, _ = self.read(data["path"])
        if self.settings.kind == "answers":
            train = [q for q in train if q.answers]
        self.valid_questions, self.valid_v2 = self.read(self.settings.valid_path)
        if not train or not self.valid_questions:
            raise ConfigError(f"{data['path']} or {self.settings.valid_path}: no questions to train or validate on")
        self.valid = self.encode(self.valid_questions, tokenizer)
        return Shuffled(Rows(self.encode(train, tokenizer)), seed), Rows(self.valid)

    # metrics -------------------------------------------------------------------------------------
    def predict(self, chunks, ctx, questions: list, enc: Encoded, v2: bool = False, dtype=torch.float32,
                batch=None) -> list[dict]:
        """Per question {"text", "nbest": [{"text", "score"}], "null_score"} (decode.decode)."""
        rows = self.logits(chunks, ctx, enc, dtype, batch)
        starts, ends = zip(*(span_logits(r) for r in rows)) if rows else ((), ())
        s = self.settings
        return decode(list(starts), list(ends), enc, questions, s.n_best, s.max_answer_length,
                      s.null_threshold if v2 else None)

    def metrics(self, questions: list, predictions: list, v2: bool = False) -> dict:
        if self.settings.kind == "answers":
            from megazoo.tasks.synthetic_qa.decode import answer_metrics

            return answer_metrics(questions, predictions, self.settings.top_answers)
        from megazoo.tasks.synthetic_qa.score import score

        return score(questions, {q.id: p["text"] for q, p in zip(questions, predictions)}, v2)["metrics"]

    def evaluate(self, chunks, ctx, dtype) -> dict:
        if self.valid is None or not self.valid_questions:
            return {}
        preds = self.predict(chunks, ctx, self.valid_questions, self.valid, self.valid_v2, dtype)
        return self.metrics(self.valid_questions, preds, self.valid_v2)


def build(task: dict, model: dict, recompute: str = "none") -> SyntheticQABuilder:
    return SyntheticQABuilder(task, model, recompute)
