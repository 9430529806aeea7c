"""A task on a BERT with one zoo head (zoo/heads: sequence, token, span, choice): the model side
that the encoder tasks (RACE, BioMegatron's NER/RE/QA, SQuAD-style QA, the story ranker) share.

`encoder_with_head` builds the BERT from a recipe's model section (another kind of model is one
line naming the task), without the pretraining heads, whose tensors in a pretrained folder are
reported as unused (zoo/bert/heads.py). `HeadTaskBuilder` is the task builder around it: the
head's loss averaged over the global batch's targets, the batch of a head's samples, the rows'
logits for evaluation, and the check that the task's inputs fit the model's positions. A task
subclass gives its data (data_sources) and metrics (evaluate). `SpanWindows` are the span-QA
settings such tasks share.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from megazoo.core.plan.traits import ENCODER, kind_of
from megazoo.core.train.builder import TaskBuilder
from megazoo.core.train.errors import ConfigError
from megazoo.core.train.evaluation import forward_outputs
from megazoo.core.train.rows import trim
from megazoo.zoo.bert.heads import POOLER, PRETRAINING_HEADS
from megazoo.zoo.heads import choice_logits, head_count, head_loss
from megazoo.zoo.heads.choice import ChoiceBatch, collate_choices, micro_batch

POOLED_HEADS = ("sequence", "choice")  # the heads that read the pooler ([CLS] dense + tanh)
ROW_FIELDS = ("input_ids", "token_type_ids", "attention_mask")


@dataclass
class SpanWindows:
    """The settings of a span-QA task that SQuAD's windowing and n-best decoding take (zoo/heads/qa.py
    encode_qa, decode_qa), with BERT's run_squad.py defaults; a task's settings dataclass derives from
    it (core/train/task_settings.py reads BOUNDS)."""

    BOUNDS = {"doc_stride": 1, "max_query_length": 1, "max_answer_length": 1, "n_best": 1}

    doc_stride: int = 128  # tokens between the starts of a question's windows over a long context
    max_query_length: int = 64  # question tokens kept
    max_answer_length: int = 30  # tokens of the longest answer decoded
    n_best: int = 20  # start and end candidates of a window


def encoder_with_head(model: dict, recompute: str, refusal: str, head: str, **keys):
    """The BERT builder of `model` with zoo head `head` and `keys` set over the section.
    `refusal` starts the error for a model that is no encoder ("task race fine-tunes a BERT encoder").
    The pooler is kept unless `keys` or the section say otherwise; for the heads that do not read
    it, a pretrained folder's pooler counts as unused, like the pretraining heads."""
    from megazoo.zoo.bert.builder import BertBuilder

    arch = model.get("arch", "bert")
    if kind_of(arch) != ENCODER:
        raise ConfigError(f"{refusal}, got model.arch={arch!r}; start from a BERT (train.init_from: an HF BERT "
                          f"folder, `megazoo import-hf` of MiniLM, a bert run)")
    model = {**model, "arch": "bert", "task_head": head, "add_lm_head": False, "add_binary_head": False, **keys}
    model.setdefault("add_pooler", True)
    bert = BertBuilder(model, recompute)
    bert.unused_ok = PRETRAINING_HEADS + (() if head in POOLED_HEADS else POOLER)
    return bert


class HeadTaskBuilder(TaskBuilder):
    """A task builder on `encoder_with_head`'s model. Subclasses set `self.settings` (with
    max_seq_length and eval_batch) before calling this __init__."""

    def __init__(self, model: dict, recompute: str, refusal: str, head: str, **keys):
        from dataclasses import asdict

        self.head = head
        super().__init__(encoder_with_head(model, recompute, refusal, head, **keys), asdict(self.settings))

    def check_length(self) -> None:
        """task.max_seq_length within the encoder's positions (checked before encoding)."""
        n = self.settings.max_seq_length
        if n > self.seq_length:
            raise ConfigError(f"task.max_seq_length={n} exceeds the encoder's {self.seq_length} positions; lower it")

    # the objective -------------------------------------------------------------------------------
    def collate(self, samples: list) -> dict:
        if self.head == "choice":
            return collate_choices(samples)
        batch = trim({k: torch.stack([x[k] for x in samples]) for k in samples[0]})
        if "labels" not in batch:  # span targets are start/end positions; the pipeline hands labels on
            batch["labels"] = torch.full((len(samples),), -100)
        return batch

    def loss_counts(self, micro_batches: list[dict]) -> dict:
        return {"n": sum(head_count(self.head, mb) for mb in micro_batches)}

    def loss(self, out, mb: dict, counts: dict) -> torch.Tensor:
        return head_loss(self.head, out.logits, mb)[0] / counts["n"]

    # evaluation (collective: every rank runs it and gets the whole result) ---------------------------
    def _on_device(self, ctx, mb: dict) -> dict:
        return {k: v.to(ctx.device) for k, v in mb.items()} if ctx.device.type != "cpu" else mb

    def choice_scores(self, chunks, ctx, inputs: ChoiceBatch, dtype=torch.float32, batch: int | None = None
                      ) -> torch.Tensor:
        """[N, C] choice-head logits (float32 CPU) of every example."""
        batch, c = batch or self.settings.eval_batch, inputs.input_ids.shape[1]
        mbs = [self._on_device(ctx, micro_batch(inputs, slice(i, i + batch))) for i in range(0, len(inputs), batch)]
        outs = forward_outputs(chunks, ctx, mbs, lambda out, mb: choice_logits(out.logits, c).float().cpu(),
                               self.hidden_size, dtype)
        return torch.cat(outs) if outs else torch.zeros(0, c)

    def logits(self, chunks, ctx, enc, dtype=torch.float32, batch: int | None = None) -> list[torch.Tensor]:
        """Every Encoded row's logits (float32 CPU, padding columns cut: token/span [len, ...],
        sequence [labels])."""
        batch = batch or self.settings.eval_batch
        mbs, lengths = [], []
        for i in range(0, len(enc), batch):
            mb = trim({k: getattr(enc, k)[i:i + batch] for k in ROW_FIELDS})
            lengths.append(mb["attention_mask"].sum(-1).tolist())
            mb["labels"] = torch.full((mb["input_ids"].shape[0],), -100)  # the pipeline hands labels on; unused
            mbs.append(self._on_device(ctx, mb))
        outs = forward_outputs(chunks, ctx, mbs, lambda out, mb: out.logits.float().cpu(), self.hidden_size, dtype)
        rows = []
        for logits, lens in zip(outs, lengths):
            rows += [logits[j] if self.head == "sequence" else logits[j, :n] for j, n in enumerate(lens)]
        return rows
