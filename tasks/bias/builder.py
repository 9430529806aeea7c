"""The paper's fine-tuned baseline on the core trainer: `task: bias` in a recipe (entry point
megazoo.tasks:bias).

Prabhumoye et al. (2021) compare few-shot prompting with a classifier fine-tuned on labelled
posts. Here that classifier is a BERT encoder with the sequence head (zoo/heads, "sequence":
the pooled [CLS] output, two logits, cross-entropy), trained on the same support CSV the prompts
draw their exemplars from, and validated on the dev CSV with the prompts' metrics (ROC-AUC of
p(positive), accuracy and F1 at 0.5). Weights come through train.init_from (MiniLM imported, an
HF BERT folder, a bert checkpoint); layouts, precision, resume, logging and checkpoints are the
trainer's. The evaluate stage scores a test CSV with the checkpoint (classifier.py).

Task keys (task.*): category (offensive; any of data.category_names()), support
(SBIC.v2.trn.csv) and dev (SBIC.v2.dev.csv), both SBIC CSVs (per annotation or aggregated) found
in the folder data.path (an absolute path is taken as it is), max_seq_length (128: the post's
tokens are cut to fit `[CLS] post [SEP]`), eval_batch (posts per forward pass in evaluation).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch

from megazoo.core.train.config import ConfigError
from megazoo.core.train.rows import Rows, Shuffled
from megazoo.core.train.task_settings import TaskSettings
from megazoo.tasks.bias.data import Post, category_names, check_category, load_posts
from megazoo.zoo.bert.task import HeadTaskBuilder
from megazoo.zoo.heads.encoded import Encoded, check_tokenizer, finish_rows


@dataclass
class BiasTask(TaskSettings):
    NAME = "bias"
    BOUNDS = {"max_seq_length": 3, "eval_batch": 1}

    category: str = "offensive"
    support: str = "SBIC.v2.trn.csv"
    dev: str = "SBIC.v2.dev.csv"
    max_seq_length: int = 128
    eval_batch: int = 32

    def check(self) -> None:
        try:
            check_category(self.category)
        except ValueError:
            raise ConfigError(f"task.category={self.category!r} is not a bias category; choose one of "
                              f"{', '.join(category_names())}") from None


def encode_posts(posts: Sequence[Post], tokenizer, max_seq_length: int) -> Encoded:
    """`[CLS] post [SEP]` rows (the post cut to fit), token type 0, labels the posts' binary labels."""
    check_tokenizer(tokenizer, "the bias classifier")
    texts = tokenizer.encode_batch([p.text for p in posts]) if posts else []
    ids = [[tokenizer.cls, *t[: max_seq_length - 2], tokenizer.sep] for t in texts]
    labels = torch.tensor([p.label for p in posts], dtype=torch.long)
    length = max((len(r) for r in ids), default=1)
    return finish_rows(ids, [[0] * len(r) for r in ids], {"labels": labels}, tokenizer, length)


def class_check(posts: Sequence[Post], path, category: str, use: str) -> None:
    """Refuse a split whose posts all share one label: `use` says what needs both classes."""
    labels = {p.label for p in posts}
    if len(labels) < 2:
        only = "positive" if labels == {1} else "negative"
        raise ConfigError(f"{path}: all {len(posts)} posts are {only} for {category}; {use} needs both classes "
                          f"(give a CSV with offensive and non-offensive posts)")


class BiasBuilder(HeadTaskBuilder):
    def __init__(self, task: dict, model: dict, recompute: str = "none"):
        self.settings = s = BiasTask.from_dict(task)
        super().__init__(model, recompute, "task bias fine-tunes a BERT encoder", "sequence", num_labels=2,
                         label_names=[f"not {s.category}", s.category], add_pooler=True)
        self.valid: Encoded | None = None
        self.valid_posts: list[Post] = []

    # data --------------------------------------------------------------------------------------
    def files(self, data: dict) -> dict[str, Path]:
        """{"support", "dev"}: the two CSVs, relative to data.path."""
        folder = Path(data["path"])
        return {"support": folder / self.settings.support, "dev": folder / self.settings.dev}

    def read(self, data: dict) -> dict[str, list[Post]]:
        """The support and dev posts, each checked to hold both classes (a one-line ConfigError)."""
        s, out = self.settings, {}
        from megazoo.eval.readers.hf_source import is_hf_source

        for name, path in self.files(data).items():
            if not (path.is_file() or is_hf_source(path)):  # a CSV, or the same columns as an HF dataset
                raise ConfigError(f"task.{name}={getattr(s, name)!r}: no such file {path} (an SBIC v2 CSV; "
                                  f"`megazoo task bias data OUT_DIR` writes SBIC.v2.{{trn,dev,tst}}.csv)")
            try:
                out[name] = load_posts(path, s.category)
            except ValueError as e:  # SbicFormatError: `file:line: problem`
                raise ConfigError(str(e)) from None
            use = "training a classifier" if name == "support" else "the validation ROC-AUC"
            class_check(out[name], path, s.category, use)
        return out

    def check_data(self, data: dict) -> None:
        if not data.get("path"):
            raise ConfigError("task bias needs data.path: the folder of the SBIC CSVs (task.support, task.dev; "
                              "`megazoo task bias data OUT_DIR` writes one)")
        if not Path(data["path"]).is_dir():
            raise ConfigError(f"data.path={data['path']!r}: no such folder (it holds the SBIC CSVs task.support "
                              f"and task.dev)")
        self.read(data)  # parse now: errors before any rank starts

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        self.check_data(data)
        self.check_length()
        posts = self.read(data)
        self.valid_posts = posts["dev"]
        self.valid = encode_posts(self.valid_posts, tokenizer, self.settings.max_seq_length)
        train = encode_posts(posts["support"], tokenizer, self.settings.max_seq_length)
        return Shuffled(Rows(train), seed), Rows(self.valid)

    # metrics -------------------------------------------------------------------------------------
    def scores(self, chunks, ctx, enc: Encoded, dtype=torch.float32, batch: int | None = None) -> list[float]:
        """p(positive) of every row: the softmax of the two logits (collective on a layout)."""
        rows = self.logits(chunks, ctx, enc, dtype, batch)
        if not rows:
            return []
        return torch.softmax(torch.stack(rows).double(), -1)[:, 1].tolist()

    def evaluate(self, chunks, ctx, dtype) -> dict:
        from megazoo.eval.metrics import roc_auc
        from megazoo.tasks.bias.evaluate import threshold_metrics

        if self.valid is None or not self.valid_posts:
            return {}
        scores = self.scores(chunks, ctx, self.valid, dtype)
        labels = [p.label for p in self.valid_posts]
        return {"auc": roc_auc(scores, labels), **threshold_metrics(labels, scores, 0.5)}


def build(task: dict, model: dict, recompute: str = "none") -> BiasBuilder:
    return BiasBuilder(task, model, recompute)
