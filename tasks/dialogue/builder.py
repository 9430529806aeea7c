"""Dialogue fine-tuning on the core trainer: `task: dialogue` in a recipe (entry point megazoo.tasks:dialogue).

Supervised decoder fine-tuning (task sft's batching and loss: the token mean over the responses and
their end-of-document tokens) on prompt/response pairs that prompts.py builds from conversations:

    task:
      name: dialogue
      kind: actor            # actor: persona reference (Boyd et al.) | knowledge: retrieved sentences (Santhanam et al.)
      reference_turns: 3     # actor: the target speaker's turns from other conversations in the prompt
      reference: true        # actor: false trains without the reference (the baseline)
      documents: DIR         # knowledge: the document set (a folder of .txt files)
      knowledge_sentences: 2 # knowledge: BM25 sentences per response
      knowledge: true        # knowledge: false trains without them (the baseline)
      valid_fraction: 0.1    # data.path one file: this seeded share of conversations is held out
      truncate: left
    data:
      path: runs/dialogue/data/actors    # conversation JSONL, or a folder with train.jsonl and valid.jsonl

References always come from the training conversations (never from the one being answered).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from megazoo.core.train.errors import ConfigError
from megazoo.core.train.task_settings import TaskSettings
from megazoo.zoo.sft import SFTBuilder

KINDS = ("actor", "knowledge")


@dataclass
class DialogueTask(TaskSettings):
    NAME = "dialogue"
    CHOICES = {"kind": KINDS, "truncate": ("left", "right")}
    BOUNDS = {"reference_turns": 0, "knowledge_sentences": 1}

    kind: str = "actor"
    reference_turns: int = 3
    reference: bool = True
    documents: str | None = None
    knowledge_sentences: int = 2
    knowledge: bool = True
    valid_fraction: float = 0.1
    truncate: str = "left"

    def check(self) -> None:
        if self.kind == "knowledge" and self.knowledge and not self.documents:
            raise ConfigError("task.kind=knowledge needs task.documents: the document set (a folder of .txt files)")
        if not 0 < self.valid_fraction < 1:
            raise ConfigError(f"task.valid_fraction must be in (0, 1), got {self.valid_fraction}")


def split_conversations(path, valid_fraction: float, seed: int) -> tuple[list, list]:
    """(train, valid) conversations of a folder with train.jsonl and valid.jsonl, or of one file
    (a seeded share held out, at least one)."""
    from megazoo.tasks.dialogue.data import read_conversations

    path = Path(path)
    if path.is_dir():
        missing = [n for n in ("train.jsonl", "valid.jsonl") if not (path / n).is_file()]
        if missing:
            raise ConfigError(f"data.path={str(path)!r}: a conversation folder needs train.jsonl and valid.jsonl; "
                              f"missing {', '.join(missing)}")
        return read_conversations(path / "train.jsonl"), read_conversations(path / "valid.jsonl")
    if not path.is_file():
        raise ConfigError(f"data.path={str(path)!r}: no such file or folder (expected conversation JSONL)")
    convs = read_conversations(path)
    if len(convs) < 2:
        raise ConfigError(f"{path}: holding out a validation conversation needs at least 2 conversations")
    n_valid = min(len(convs) - 1, max(1, round(valid_fraction * len(convs))))
    held = set(torch.randperm(len(convs), generator=torch.Generator().manual_seed(seed)).tolist()[:n_valid])
    return [c for i, c in enumerate(convs) if i not in held], [c for i, c in enumerate(convs) if i in held]


def build_pairs(settings: DialogueTask, conversations: list, train: list, seed: int = 0, documents=None) -> list:
    """The prompt/response pairs of `conversations` (references drawn from `train`)."""
    from megazoo.tasks.dialogue import prompts
    from megazoo.tasks.dialogue.knowledge import DocumentSet

    if settings.kind == "actor":
        return prompts.actor_pairs(conversations, prompts.speaker_turns(train), settings.reference_turns, seed,
                                   settings.reference and settings.reference_turns > 0)
    if settings.knowledge and documents is None:
        documents = DocumentSet(settings.documents)
    return prompts.knowledge_pairs(conversations, documents, settings.knowledge_sentences, settings.knowledge)


class DialogueBuilder(SFTBuilder):
    def __init__(self, model_builder, task: dict):
        self.settings = DialogueTask.from_dict(task)
        super().__init__(model_builder, {})
        self.task = asdict(self.settings)

    def check_data(self, data: dict) -> None:
        from megazoo.eval.readers.common import ReaderError

        if not isinstance(data.get("path"), str):
            raise ConfigError("task dialogue needs data.path: a conversation JSONL file (or a folder with "
                              "train.jsonl and valid.jsonl), e.g. from `megazoo task dialogue data`")
        try:
            split_conversations(data["path"], self.settings.valid_fraction, 0)
        except ReaderError as e:
            raise ConfigError(str(e)) from None

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        from megazoo.core.data import sft as reader
        from megazoo.core.train.data import EpochSource
        from megazoo.tasks.dialogue.knowledge import DocumentSet

        self.check_data(data)
        self.pad_id = tokenizer.pad if tokenizer.pad is not None else tokenizer.eod
        s = self.settings
        train, valid = split_conversations(data["path"], s.valid_fraction, seed)
        docs = DocumentSet(s.documents) if s.kind == "knowledge" and s.knowledge else None
        sources = []
        for name, convs in (("train", train), ("valid", valid)):
            pairs = build_pairs(s, convs, train, seed, docs)
            examples = [reader.Example([(p.prompt, False), (p.response, True)], p.path, p.line) for p in pairs]
            samples = reader.tokenize(examples, tokenizer, self.seq_length, s.truncate)
            if not samples.items:
                raise ConfigError(f"data.path={data['path']!r}: no {name} example fits in model.seq_length="
                                  f"{self.seq_length}; raise model.seq_length")
            sources.append(EpochSource(samples.items, seed, shuffle=name == "train"))
        return tuple(sources)


def build(task: dict, model: dict, recompute: str = "none") -> DialogueBuilder:
    from megazoo.zoo.gpt.task import decoder_arch, decoder_model

    refusal = "task dialogue fine-tunes decoders"
    decoder_arch(model, refusal)
    DialogueTask.from_dict(task)
    return DialogueBuilder(decoder_model(model, recompute, refusal), task)

