"""What the trainer asks of a model or a task: the builder protocol, with its defaults.

Architectures register a builder (a class, or a function) in the entry-point group "megazoo.models" (pyproject.toml),
`gpt = "megazoo.zoo.gpt.builder:build"`, called as `build(model: dict, recompute: str)`; tasks
register one in "megazoo.tasks", `race = "megazoo.tasks.race.builder:build"`, called as
`build(task: dict, model: dict, recompute: str)`, which usually adjusts the model section (a head,
no masked-LM head) and wraps the architecture's builder in a `TaskBuilder`. Both return a `Builder`.

A builder says:
    to_dict()                      the fully resolved model config (with "arch")
    check_layout(parallel)         raise ConfigError when the model cannot take the layout
    chunks(ctx, seed, device)      this rank's model chunks (one per virtual pipeline stage), fp32,
                                   initialised layout-independently from `seed`
    load_weights(chunks, path, ctx) fill the chunks from a pretrained folder (train.init_from)
    weight_reader(path, ctx)       the same a tensor at a time, for ZeRO-3 (default: none)
    flops_per_iteration(batch, tp, seq_length), num_parameters(tp)
    hidden_size, seq_length, vocab_size
and, with defaults here (next-token pretraining on megazoo.core.data's GPT samples):
    check_data(data)                                                     cheap checks before ranks start
    data_sources(data, tokenizer, seed, num_samples) -> (train, valid)   sources with get(i), len()
    collate(samples) -> micro-batch dict                                 stacks the samples
    loss_counts(micro_batches) -> {name: count}; loss(out, mb, counts)   token mean of the loss
    evaluate(chunks, ctx, dtype) -> {metric: value}                      task metrics (none here)
and optionally:
    before_step(step, chunks, ctx, dtype)   called by the trainer on every rank before each step
                                            (collective), e.g. re-retrieval with the current model

Loss rule (see trainer.py): the trainer sums `loss_counts` over the global batch (all micro-batches
and data-parallel ranks); each micro-batch contributes `loss(out, mb, counts)`, its share of the
global-batch objective, so every layout gives the same gradient.
"""

from __future__ import annotations

import torch

IGNORE = -100


class Builder:
    """Defaults for a builder (see the module docstring); subclasses give the model."""

    own_data = False  # True: the builder reads its own data (refuses data.synthetic)
    whole_valid_split = False  # True: validation reads the whole (finite) split, not train.eval_iters batches
    tokenizer_extra_ids = 0  # sentinel tokens the tokenizer must add (T5)

    # the model ---------------------------------------------------------------------------------
    hidden_size: int
    seq_length: int
    vocab_size: int

    def to_dict(self) -> dict:
        raise NotImplementedError

    def check_layout(self, parallel) -> None:
        pass

    def chunks(self, ctx, seed: int, device=None) -> list:
        raise NotImplementedError

    def load_weights(self, chunks, path, ctx) -> dict:
        """Fill `chunks` from a pretrained folder; returns {"missing": [...], "unused": [...]}."""
        from megazoo.core.train.errors import ConfigError

        raise ConfigError(f"model.arch={self.to_dict().get('arch')!r} cannot start from train.init_from")

    def weight_reader(self, path, ctx) -> tuple:
        """(reader, None): train.init_from read a tensor at a time into ZeRO-3's shards, from chunks
        built on the meta device (reader.bind(chunks, seed), reader.values(params): see
        megazoo.zoo.pretrained.UnitReader); (None, why not): load_weights reads it whole."""
        return None, f"model.arch={self.to_dict().get('arch')!r} loads its weights whole"

    def flops_per_iteration(self, batch: int, tp: int = 1, seq_length: int | None = None) -> float:
        return 0.0

    def num_parameters(self, tp: int = 1) -> int:
        return 0

    def shape(self):
        """The model's ModelShape for the planner (core/plan); a model it cannot describe raises."""
        raise NotImplementedError(f"{type(self).__name__} has no plan shape")

    # data and objective ------------------------------------------------------------------------
    def check_data(self, data: dict) -> None:
        """Cheap checks of the data settings before any rank starts (a missing file, a bad key);
        raise ConfigError. The full read happens in data_sources."""

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        """(train, valid) GPT samples of megazoo.core.data: tokens[seq + 1] -> input_ids, labels."""
        from megazoo.core.data import build_gpt_datasets
        from megazoo.core.train.data import CoreDataSource

        splits = build_gpt_datasets(data, tokenizer, seq_length=self.seq_length, seed=seed, num_samples=num_samples)
        return tuple(CoreDataSource(s) if s is not None else None for s in (splits.train, splits.valid))

    def collate(self, samples: list) -> dict:
        """Stack samples ((input_ids, labels) pairs or dicts of same-shaped tensors) into a micro-batch."""
        from megazoo.core.train.data import stack_samples

        return stack_samples(samples)

    def loss_counts(self, micro_batches: list[dict]) -> dict:
        return {"tokens": sum((mb["labels"] != IGNORE).sum() for mb in micro_batches)}

    def loss(self, out, mb: dict, counts: dict) -> torch.Tensor:
        """`out` is the last stage's per-token loss [b, s] (0 where ignored)."""
        return out.float().sum() / counts["tokens"]

    def evaluate(self, chunks, ctx, dtype) -> dict:
        """Task metrics on the validation data, computed collectively on every rank (none here)."""
        return {}

    def before_step(self, step: int, chunks, ctx, dtype) -> None:
        """Called on every rank before each training step, collectively: a builder that updates its
        data from the model overrides it (the retrieval reader's end-to-end re-retrieval). Nothing here."""


class TaskBuilder(Builder):
    """A task on an architecture: the model, sizes and weights are the wrapped model builder's;
    the task gives its data, objective and metrics."""

    own_data = True
    whole_valid_split = True  # a task's metrics are over its whole validation split

    def __init__(self, model_builder: Builder, task: dict):
        self.model, self.task = model_builder, dict(task)

    @property
    def hidden_size(self) -> int:
        return self.model.hidden_size

    @property
    def seq_length(self) -> int:
        return self.model.seq_length

    @property
    def vocab_size(self) -> int:
        return self.model.vocab_size

    @property
    def tokenizer_extra_ids(self) -> int:
        return self.model.tokenizer_extra_ids

    def to_dict(self) -> dict:
        return self.model.to_dict()

    def task_dict(self) -> dict:
        return dict(self.task)

    def check_layout(self, parallel) -> None:
        self.model.check_layout(parallel)

    def chunks(self, ctx, seed: int, device=None) -> list:
        return self.model.chunks(ctx, seed, device)

    def load_weights(self, chunks, path, ctx) -> dict:
        return self.model.load_weights(chunks, path, ctx)

    def weight_reader(self, path, ctx) -> tuple:
        if type(self).load_weights is not TaskBuilder.load_weights:  # the task loads its own way
            return None, f"task {self.task.get('name')!r} loads its weights its own way"
        return self.model.weight_reader(path, ctx)

    def flops_per_iteration(self, batch: int, tp: int = 1, seq_length: int | None = None) -> float:
        return self.model.flops_per_iteration(batch, tp, seq_length)

    def num_parameters(self, tp: int = 1) -> int:
        return self.model.num_parameters(tp)

    def shape(self):
        """The wrapped model's ModelShape for the planner (a task head is small beside it)."""
        return self.model.shape()
