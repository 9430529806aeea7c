"""The knowledge ranker on the core trainer (task.component: ranker): a BERT encoder with the
choice head (zoo/heads) scores each (knowledge sentence, story so far) pair of a step; the
softmax cross-entropy over a step's candidates pulls towards the weak label. Validation metrics:
`top1_agreement` (the ranker's first choice is the weak label) and `random_agreement` (1 / candidates,
what a random order agrees on)."""

from __future__ import annotations

from pathlib import Path

import torch

from megazoo.core.train.errors import ConfigError
from megazoo.core.train.rows import Rows, Shuffled
from megazoo.zoo.bert.task import HeadTaskBuilder
from megazoo.zoo.heads.choice import ChoiceBatch, pair_ids


def encode_steps(rows: list[dict], tokenizer, max_seq_length: int) -> ChoiceBatch:
    """[N, C, L] (knowledge, context) pairs and labels of ranker steps (C the same for every step)."""
    sizes = {len(r["candidates"]) for r in rows}
    if len(sizes) != 1:
        raise ValueError(f"every ranker step needs the same number of candidates, got {sorted(sizes)}")
    ids, types, masks = [], [], []
    for r in rows:
        context = tokenizer.encode(" ".join(r["context"]))
        per = [pair_ids(tokenizer.encode(c), context, max_seq_length, tokenizer.cls, tokenizer.sep, tokenizer.pad)
               for c in r["candidates"]]
        ids.append([p[0] for p in per])
        types.append([p[1] for p in per])
        masks.append([p[2] for p in per])
    return ChoiceBatch(torch.tensor(ids, dtype=torch.int32), torch.tensor(types, dtype=torch.int8),
                       torch.tensor(masks, dtype=torch.int8), torch.tensor([int(r.get("label", 0)) for r in rows]))


class RankerBuilder(HeadTaskBuilder):
    def __init__(self, settings, model: dict, recompute: str = "none"):
        """`settings`: the story task's (builder.StoryTask, component ranker)."""
        self.settings = settings
        super().__init__(model, recompute, "task story's ranker is a BERT scorer", "choice")
        self.valid: ChoiceBatch | None = None

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        from megazoo.tasks.story.weak_labels import read_ranker_jsonl

        path = data.get("path")
        if not path or not Path(path).is_dir():
            raise ConfigError(f"task story's ranker needs data.path: a folder with ranker-train.jsonl and "
                              f"ranker-valid.jsonl (`megazoo task story label` writes them), got {path!r}")
        self.check_length()
        length = self.settings.max_seq_length
        try:
            train = read_ranker_jsonl(Path(path) / "ranker-train.jsonl")
            valid = read_ranker_jsonl(Path(path) / "ranker-valid.jsonl")
            self.valid = encode_steps(valid, tokenizer, length)
            train_inputs = encode_steps(train, tokenizer, length)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return Shuffled(Rows(train_inputs), seed), Rows(self.valid)

    def evaluate(self, chunks, ctx, dtype) -> dict:
        if self.valid is None or len(self.valid) == 0:
            return {}
        top = self.choice_scores(chunks, ctx, self.valid, dtype).argmax(-1)
        return {"top1_agreement": float((top == self.valid.labels).double().mean()),
                "random_agreement": 1.0 / self.valid.input_ids.shape[1]}
