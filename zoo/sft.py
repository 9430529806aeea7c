"""Supervised decoder fine-tuning (task `sft`, entry point megazoo.tasks): GPT or Llama-style
decoders trained on JSONL prompt/response pairs or chats with the loss on the responses only.

    task:
      name: sft
      valid_fraction: 0.05   # one data.path file: this seeded share (at least 1 example) is held out
      truncate: left         # left: keep the end of the prompt | right: keep the start
      template: plain        # pairs: plain (prompt then response as written) | chat (<|user|> ... turns)
    data:
      path: pairs.jsonl      # a JSONL file, or a folder with train.jsonl and valid.jsonl
      tokenizer: gpt2

The file format, templates and truncation are megazoo.core.data.sft's. The objective is the
builder default, the token mean over non-ignored labels of the global batch: exactly the mean
loss over the response tokens (and their EODs), so the trainer's validation loss and perplexity
are response-only too. Micro-batches are padded to their longest sample (a multiple of 8, and of
tp under sequence parallelism, at most model.seq_length); every pipeline stage collates the same
samples, so every stage sees the same shape.
"""

from __future__ import annotations

import difflib
import math

import torch.distributed as dist

from megazoo.core.data import sft as reader
from megazoo.core.plan.traits import DECODER, architectures, kind_of
from megazoo.core.train.builder import Builder, TaskBuilder
from megazoo.core.train.data import EpochSource
from megazoo.core.train.config_checks import check_type
from megazoo.core.train.errors import ConfigError

DEFAULTS = {"valid_fraction": 0.05, "truncate": "left", "template": "plain"}


class SFTBuilder(TaskBuilder):
    def __init__(self, model_builder: Builder, task: dict):
        super().__init__(model_builder, {**DEFAULTS, **task})
        self.pad_multiple = 8
        self.pad_id = 0  # the tokenizer's pad (or EOD) once data_sources has run; padding is never a target

    def check_layout(self, parallel) -> None:
        super().check_layout(parallel)
        if parallel.sp:  # a padded length must split evenly across the tp ranks
            self.pad_multiple = math.lcm(8, parallel.tp)

    def check_data(self, data: dict) -> None:
        """Before any rank starts: data.path is set and its files parse (errors name file:line)."""
        path = data.get("path")
        if path is None:
            raise ConfigError("task sft needs data.path: a JSONL file of {prompt, response} pairs (or chats), "
                              "or a folder with train.jsonl and valid.jsonl")
        if not isinstance(path, str):
            raise ConfigError(f"task sft reads one JSONL file or folder from data.path, got {path!r}")
        try:
            reader.split_files(path, self.task["template"], self.task["valid_fraction"], 0)
        except ValueError as e:
            raise ConfigError(str(e)) from None

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        self.check_data(data)
        path = data["path"]
        t = self.task
        self.pad_id = tokenizer.pad if tokenizer.pad is not None else tokenizer.eod
        splits = reader.split_files(path, t["template"], t["valid_fraction"], seed)
        sources, notes = [], []
        for name, examples in zip(("train", "valid"), splits):
            samples = reader.tokenize(examples, tokenizer, self.seq_length, t["truncate"])
            if samples.dropped:
                first = samples.dropped[0]
                notes.append(f"{len(samples.dropped)} of {len(examples)} {name} examples (first {first.path}:"
                             f"{first.line})")
            if not samples.items:
                raise ConfigError(f"data.path={path!r}: no {name} example fits in model.seq_length="
                                  f"{self.seq_length} with task.truncate={t['truncate']}; raise model.seq_length")
            # validation keeps file order: the same batches at every evaluation
            sources.append(EpochSource(samples.items, seed, shuffle=name == "train"))
        if notes and (not dist.is_initialized() or dist.get_rank() == 0):
            print(f"task sft: dropped {'; '.join(notes)}: the response does not fit in model.seq_length="
                  f"{self.seq_length} (task.truncate={t['truncate']})", flush=True)
        return tuple(sources)

    def collate(self, samples: list) -> dict:
        return reader.pad_batch(samples, self.seq_length, self.pad_id, self.pad_multiple)


def check_task(task: dict) -> dict:
    """The task section with its keys checked (unknown keys name the nearest valid one)."""
    for key in task:
        if key not in DEFAULTS:
            close = difflib.get_close_matches(key, list(DEFAULTS), n=1)
            hint = f"; did you mean `task.{close[0]}`?" if close else ""
            raise ConfigError(f"unknown key `task.{key}` for task sft{hint} (known: {', '.join(DEFAULTS)})")
    t = {**DEFAULTS, **task}
    if t["truncate"] not in reader.TRUNCATE:
        raise ConfigError(f"task.truncate must be left or right, got {t['truncate']!r}")
    if t["template"] not in reader.TEMPLATES:
        raise ConfigError(f"task.template must be plain or chat, got {t['template']!r}")
    t["valid_fraction"] = check_type("task.valid_fraction", t["valid_fraction"], "float", "task sft")
    if not 0 < t["valid_fraction"] < 1:
        raise ConfigError(f"task.valid_fraction must be a number in (0, 1), got {t['valid_fraction']!r}")
    return t


def build(task: dict, model: dict, recompute: str = "none") -> SFTBuilder:
    arch = model.get("arch", "gpt")
    if kind_of(arch) != DECODER:
        raise ConfigError(f"task sft fine-tunes decoders: model.arch={arch!r} is not one of "
                          f"{', '.join(architectures(DECODER))}")
    from megazoo.zoo.gpt.builder import build as build_gpt

    return SFTBuilder(build_gpt(model, recompute), check_task(task))
