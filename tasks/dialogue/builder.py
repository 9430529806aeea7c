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

from megazoo.core.train.config_checks import fill_dataclass
from megazoo.core.train.errors import ConfigError
from megazoo.zoo.sft import SFTBuilder

ARCHS = ("gpt", "llama")
KINDS = ("actor", "knowledge")


@dataclass
class DialogueTask:
    kind: str = "actor"
    reference_turns: int = 3
    reference: bool = True
    documents: str | None = None
    knowledge_sentences: int = 2
    knowledge: bool = True
    valid_fraction: float = 0.1
    truncate: str = "left"

    @classmethod
    def from_dict(cls, task: dict) -> "DialogueTask":
        out = fill_dataclass(cls, task, "task", "task dialogue")
        if out.kind not in KINDS:
            raise ConfigError(f"task.kind must be actor or knowledge, got {out.kind!r}")
        if out.kind == "knowledge" and out.knowledge and not out.documents:
            raise ConfigError("task.kind=knowledge needs task.documents: the document set (a folder of .txt files)")
        if out.reference_turns < 0 or out.knowledge_sentences < 1:
            raise ConfigError("task.reference_turns must be >= 0 and task.knowledge_sentences >= 1")
        if not 0 < out.valid_fraction < 1:
            raise ConfigError(f"task.valid_fraction must be in (0, 1), got {out.valid_fraction}")
        if out.truncate not in ("left", "right"):
            raise ConfigError(f"task.truncate must be left or right, got {out.truncate!r}")
        return out


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
                              "train.jsonl and valid.jsonl), e.g. from `megazoo task dialogue generate`")
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
    arch = model.get("arch", "gpt")
    if arch not in ARCHS:
        raise ConfigError(f"task dialogue fine-tunes decoders: model.arch={arch!r} is not one of {', '.join(ARCHS)}")
    from megazoo.zoo.gpt.builder import build as build_gpt

    DialogueTask.from_dict(task)
    return DialogueBuilder(build_gpt(model, recompute), task)

