"""The question tower of a bi-encoder training checkpoint, for a task that embeds queries with it
(MSDP's example selection) without importing the retrieval task (tasks never import each other).

    tower = QuestionTower("runs/retrieval/finetune")     # a run folder, its checkpoints/ or one iter_*
    vecs = tower.encode(["( Jazz ) Do you like it?"])    # float32 [N, h]

A bi-encoder checkpoint is a `megazoo task retrieval train` checkpoint of a retriever: its task meta
is named `retrieval` and trains no reader (`task.component` absent: objective supervised or ict). Its
weights hold one shared tower, or two (`query.*`, `context.*`, task.shared_towers false), of which
this loads the query tower, the one DPR's question encoder is. A text becomes `[CLS] text [SEP]`
(type ids 0) as DPR's question tokenizer makes it; the vector is the checkpoint's pooling
(model.pooling, mean for a plain encoder) and with task.similarity cosine it is L2-normalised, so the
inner product of two vectors is the similarity the retriever was trained with. Texts are cut at
`max_length` tokens (default the encoder's positions, at most 512: Megatron's MSDP encodes whole
dialogues, not the retriever's short question length).

Anything else (an import-hf or Hugging Face folder, another task's checkpoint, a reader checkpoint)
raises NotBiEncoder with one line that names the path and says what to give instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from megazoo.zoo.embed import Embedder

TASK = "retrieval"
TOWER = "query"
MAX_LENGTH = 512


class NotBiEncoder(ValueError):
    """The checkpoint is not a bi-encoder (retriever) training checkpoint; the message says what to do."""


@dataclass
class TowerConfig:
    """How the tower embeds: pooling/similarity None take the checkpoint's own; max_length None:
    the encoder's positions (at most 512); batch: texts per forward pass."""

    pooling: str | None = None
    similarity: str | None = None
    max_length: int | None = None
    batch: int = 32


def bi_encoder_meta(checkpoint: str | os.PathLike, flag: str = "checkpoint"):
    """(resolved iter_* folder, its meta) of a retriever checkpoint, else NotBiEncoder."""
    from pathlib import Path

    from megazoo.eval.readers.common import MissingFile
    from megazoo.eval.taskkit import NotTaskCheckpoint, read_task_meta

    if not Path(checkpoint).exists():
        raise MissingFile(f"{flag} {checkpoint}: no such checkpoint (give a retriever run folder, its checkpoints/ "
                          f"or one iter_* folder)")
    hint = ("give a retriever checkpoint of `megazoo task retrieval train` (task.objective supervised or ict), or "
            "a sentence encoder folder with --embedder")
    try:
        resolved, meta = read_task_meta(checkpoint, TASK)
    except NotTaskCheckpoint as e:
        reason = str(e).split(";")[0]
        raise NotBiEncoder(f"{flag} {checkpoint}: not a bi-encoder checkpoint ({reason}); {hint}") from None
    task = meta["task"] if isinstance(meta["task"], dict) else {}
    if task.get("component") is not None:
        raise NotBiEncoder(f"{flag} {checkpoint}: a retrieval {task['component']!r} (reader) checkpoint, not a "
                           f"bi-encoder; {hint}")
    return resolved, meta


def has_towers(state: dict) -> bool:
    """True when a full state dict holds two towers (query.* and context.*; tasks/retrieval/towers.py)."""
    return any(k.startswith("query.") for k in state) and any(k.startswith("context.") for k in state)


def tower_state(state: dict, name: str) -> dict:
    """The tensors of one tower: its prefix stripped when the state holds two towers, else all."""
    if not has_towers(state):
        return state
    prefix = name + "."
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


class QuestionTower(Embedder):
    """A retriever checkpoint's query tower; `encode(texts)` gives its question vectors."""

    def __init__(self, checkpoint: str | os.PathLike, config: TowerConfig | None = None, device=None,
                 flag: str = "checkpoint"):
        config = config or TowerConfig()
        resolved, meta = bi_encoder_meta(checkpoint, flag)
        task = meta["task"] if isinstance(meta["task"], dict) else {}
        positions = meta["model"].get("seq_length")
        length = config.max_length or min(positions if isinstance(positions, int) else MAX_LENGTH, MAX_LENGTH)
        self.separate = False
        super().__init__(resolved, max_length=length, device=device, decoders=False)
        self.checkpoint = str(checkpoint)
        self.pooling = config.pooling or self._own_pooling or "mean"
        self.similarity = config.similarity or task.get("similarity") or "dot"
        if self.similarity not in ("dot", "cosine"):
            raise NotBiEncoder(f"{flag} {checkpoint}: similarity {self.similarity!r}; expected dot or cosine")
        self.batch = config.batch

    def _build(self, arch: str, cfg, state: dict, dtype):
        own = getattr(cfg, "pooling", "none")
        self._own_pooling = own if own != "none" else None
        tower = tower_state(state, TOWER)
        self.separate = tower is not state
        return super()._build(arch, cfg, tower, dtype)

    def encode(self, texts: Sequence[str], progress: bool = False, **_) -> np.ndarray:  # type: ignore[override]
        """float32 [len(texts), hidden]: the query tower's vectors (unit length with cosine)."""
        return super().encode(list(texts), batch=self.batch, pooling=self.pooling,
                              normalize=self.similarity == "cosine", progress=progress)
