"""Dialogue fine-tuning on the core trainer: `task: dialogue` in a recipe (entry point megazoo.tasks:dialogue).

Supervised decoder fine-tuning (task sft's batching and loss: the token mean over the responses and
their end-of-document tokens) on prompt/response pairs that prompts.py builds from conversations:

    task:
      name: dialogue
      kind: actor            # actor: persona reference (Boyd et al.) | knowledge: local knowledge (Santhanam et al.)
      reference_unit: conversation  # actor: the reference is whole previous conversations | turn: single turns
      reference_conversations: 2    # actor, unit conversation: the target speaker's conversations (other threads)
      reference_turns: 3     # actor, unit turn: the target speaker's turns from other conversations
      reference: true        # actor: false trains without the reference (the baseline)
      documents: DIR         # knowledge: the document set (a folder of .txt files), BM25-retrieved
      knowledge_sentences: 2 # knowledge: BM25 sentences of the document set per response
      links: DIR             # knowledge: linked documents (a folder with urls.jsonl, or the index file)
      link_sentences: 2      # knowledge: the best sentences of the documents linked so far
      user_history: 0        # knowledge: the user's last N turns in other threads (0: off)
      history_of: user       # knowledge: whose history: the user answered | responder (the one answering)
      knowledge: true        # knowledge: false trains without any of them (the baseline)
      valid_fraction: 0.1    # data.path one file: this seeded share of conversations is held out
      truncate: left
    data:
      path: runs/dialogue/data/actors    # conversation JSONL, or a folder with train.jsonl and valid.jsonl

References always come from the training conversations (never from the thread being answered); a
user's history from the training conversations and the conversations being answered (other threads).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from megazoo.core.train.errors import ConfigError
from megazoo.core.train.task_settings import TaskSettings
from megazoo.tasks.dialogue.prompts import HISTORY_OF, UNITS
from megazoo.zoo.sft import SFTBuilder

KINDS = ("actor", "knowledge")


@dataclass
class DialogueTask(TaskSettings):
    NAME = "dialogue"
    CHOICES = {"kind": KINDS, "truncate": ("left", "right"), "reference_unit": UNITS, "history_of": HISTORY_OF}
    BOUNDS = {"reference_turns": 0, "reference_conversations": 1, "knowledge_sentences": 1, "link_sentences": 1,
              "user_history": 0}

    kind: str = "actor"
    reference_unit: str = "conversation"
    reference_conversations: int = 2
    reference_turns: int = 3
    reference: bool = True
    documents: str | None = None
    knowledge_sentences: int = 2
    links: str | None = None
    link_sentences: int = 2
    user_history: int = 0
    history_of: str = "user"
    knowledge: bool = True
    valid_fraction: float = 0.1
    truncate: str = "left"

    def check(self) -> None:
        if self.kind == "knowledge" and self.knowledge and not (self.documents or self.links or self.user_history):
            raise ConfigError("task.kind=knowledge needs task.documents: the document set (a folder of .txt files), "
                              "or task.links (linked documents: a folder with urls.jsonl) or task.user_history > 0")
        if not 0 < self.valid_fraction < 1:
            raise ConfigError(f"task.valid_fraction must be in (0, 1), got {self.valid_fraction}")


def split_conversations(path, valid_fraction: float, seed: int) -> tuple[list, list]:
    """(train, valid) conversations of a folder with train.jsonl and valid.jsonl, or of one file
    (a seeded share of its threads held out, at least one: the conversations of a Reddit thread stay
    together; a conversation without a thread is a thread of its own)."""
    from megazoo.eval.readers.hf_source import is_hf_source
    from megazoo.tasks.dialogue.data import read_conversations

    if not is_hf_source(path):  # one split of a Hugging Face dataset is held out from as one file (data_hf.py)
        path = Path(path)
        if path.is_dir():
            missing = [n for n in ("train.jsonl", "valid.jsonl") if not (path / n).is_file()]
            if missing:
                raise ConfigError(f"data.path={str(path)!r}: a conversation folder needs train.jsonl and "
                                  f"valid.jsonl; missing {', '.join(missing)}")
            return read_conversations(path / "train.jsonl"), read_conversations(path / "valid.jsonl")
        if not path.is_file():
            raise ConfigError(f"data.path={str(path)!r}: no such file or folder (expected conversation JSONL)")
    convs = read_conversations(path)
    groups = list(dict.fromkeys(c.group for c in convs))
    if len(groups) < 2:
        raise ConfigError(f"{path}: holding out a validation conversation needs at least 2 conversations "
                          f"(of different threads)")
    n_valid = min(len(groups) - 1, max(1, round(valid_fraction * len(groups))))
    order = torch.randperm(len(groups), generator=torch.Generator().manual_seed(seed)).tolist()
    held = {groups[i] for i in order[:n_valid]}
    return [c for c in convs if c.group not in held], [c for c in convs if c.group in held]


def build_pairs(settings: DialogueTask, conversations: list, train: list, seed: int = 0, documents=None,
                links=None) -> list:
    """The prompt/response pairs of `conversations` (references drawn from `train`; histories from
    `train` and `conversations`); `documents`/`links` reuse a loaded document set / link index."""
    from megazoo.tasks.dialogue import prompts
    from megazoo.tasks.dialogue.knowledge import DocumentSet
    from megazoo.tasks.dialogue.links import LinkedDocuments

    s = settings
    if s.kind == "actor":
        if s.reference_unit == "turn":
            return prompts.actor_pairs(conversations, prompts.speaker_turns(train), s.reference_turns, seed,
                                       s.reference and s.reference_turns > 0, "turn")
        return prompts.actor_pairs(conversations, prompts.speaker_conversations(train), s.reference_conversations,
                                   seed, s.reference, "conversation")
    on = s.knowledge
    if on and s.documents and documents is None:
        documents = DocumentSet(s.documents)
    if on and s.links and links is None:
        links = LinkedDocuments(s.links)
    history = None
    if on and s.user_history:
        history = prompts.speaker_turns(train if conversations is train else train + conversations)
    return prompts.knowledge_pairs(conversations, documents if on and s.documents else None, s.knowledge_sentences,
                                   on, links if on and s.links else None, s.link_sentences, history,
                                   s.user_history, s.history_of)


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
        from megazoo.tasks.dialogue.links import LinkedDocuments

        self.check_data(data)
        self.pad_id = tokenizer.pad if tokenizer.pad is not None else tokenizer.eod
        s = self.settings
        train, valid = split_conversations(data["path"], s.valid_fraction, seed)
        docs = DocumentSet(s.documents) if s.kind == "knowledge" and s.knowledge and s.documents else None
        links = LinkedDocuments(s.links) if s.kind == "knowledge" and s.knowledge and s.links else None
        sources = []
        for name, convs in (("train", train), ("valid", valid)):
            pairs = build_pairs(s, convs, train, seed, docs, links)
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

