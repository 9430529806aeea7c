"""The knowledge ranker on the core trainer (task.component: ranker): a BERT encoder with the
choice head (zoo/heads.py) scores each (knowledge sentence, story so far) pair of a step; the
softmax cross-entropy over a step's candidates pulls towards the weak label. Validation metrics:
`top1_agreement` (the ranker's first choice is the weak label) and `random_agreement` (1 / candidates,
what a random order agrees on)."""

from __future__ import annotations

from pathlib import Path

import torch

from megazoo.core.train.builder import TaskBuilder
from megazoo.core.train.errors import ConfigError
from megazoo.core.train.evaluation import forward_outputs
from megazoo.tasks.race.builder import PRETRAINING_HEADS, Shuffled, collate_choices, micro_batch
from megazoo.tasks.race.inputs import RaceBatch, pair_ids
from megazoo.zoo.heads import choice_logits, head_loss


def encode_steps(rows: list[dict], tokenizer, max_seq_length: int) -> RaceBatch:
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
    return RaceBatch(torch.tensor(ids, dtype=torch.int32), torch.tensor(types, dtype=torch.int8),
                     torch.tensor(masks, dtype=torch.int8), torch.tensor([int(r.get("label", 0)) for r in rows]))


class Steps:
    def __init__(self, inputs: RaceBatch):
        self.inputs = inputs

    def __len__(self) -> int:
        return len(self.inputs)

    def get(self, i: int) -> dict:
        x, i = self.inputs, i % len(self.inputs)
        return {"input_ids": x.input_ids[i], "token_type_ids": x.token_type_ids[i],
                "attention_mask": x.attention_mask[i], "labels": x.labels[i]}


class RankerBuilder(TaskBuilder):
    def __init__(self, task: dict, model: dict, recompute: str = "none"):
        from megazoo.zoo.bert.builder import BertBuilder

        arch = model.get("arch", "bert")
        if arch != "bert":
            raise ConfigError(f"task story's ranker is a BERT scorer, got model.arch={arch!r}; start from a BERT "
                              f"(train.init_from: `megazoo import-hf` of MiniLM)")
        model = {**model, "arch": "bert", "task_head": "choice", "add_lm_head": False, "add_binary_head": False}
        model.setdefault("add_pooler", True)
        bert = BertBuilder(model, recompute)
        bert.unused_ok = PRETRAINING_HEADS
        super().__init__(bert, task)
        self.valid: RaceBatch | None = None

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        from megazoo.tasks.story.weak_labels import read_ranker_jsonl

        path = data.get("path")
        if not path or not Path(path).is_dir():
            raise ConfigError(f"task story's ranker needs data.path: a folder with ranker-train.jsonl and "
                              f"ranker-valid.jsonl (`megazoo task story label` writes them), got {path!r}")
        if self.task["max_seq_length"] > self.seq_length:
            raise ConfigError(f"task.max_seq_length={self.task['max_seq_length']} exceeds the encoder's "
                              f"{self.seq_length} positions")
        try:
            train = read_ranker_jsonl(Path(path) / "ranker-train.jsonl")
            valid = read_ranker_jsonl(Path(path) / "ranker-valid.jsonl")
            self.valid = encode_steps(valid, tokenizer, self.task["max_seq_length"])
            train_inputs = encode_steps(train, tokenizer, self.task["max_seq_length"])
        except ValueError as e:
            raise ConfigError(str(e)) from None
        return Shuffled(Steps(train_inputs), seed), Steps(self.valid)

    def collate(self, samples: list) -> dict:
        return collate_choices(samples)

    def loss_counts(self, micro_batches: list[dict]) -> dict:
        return {"steps": sum((mb["labels"] != -100).sum() for mb in micro_batches)}

    def loss(self, out, mb: dict, counts: dict) -> torch.Tensor:
        return head_loss("choice", out.logits, mb)[0] / counts["steps"]

    def scores(self, chunks, ctx, inputs: RaceBatch, dtype=torch.float32) -> torch.Tensor:
        """[N, C] ranker logits of every step, on every rank (collective)."""
        batch, c = self.task["eval_batch"], inputs.input_ids.shape[1]
        mbs = [micro_batch(inputs, slice(i, i + batch)) for i in range(0, len(inputs), batch)]
        outs = forward_outputs(chunks, ctx, mbs, lambda out, mb: choice_logits(out.logits, c).float().cpu(),
                               self.hidden_size, dtype)
        return torch.cat(outs) if outs else torch.zeros(0, c)

    def evaluate(self, chunks, ctx, dtype) -> dict:
        if self.valid is None or len(self.valid) == 0:
            return {}
        top = self.scores(chunks, ctx, self.valid, dtype).argmax(-1)
        return {"top1_agreement": float((top == self.valid.labels).double().mean()),
                "random_agreement": 1.0 / self.valid.input_ids.shape[1]}
