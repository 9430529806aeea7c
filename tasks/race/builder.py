"""RACE on the core trainer: `task: race` in a recipe (entry point megazoo.tasks:race).

The model is a BERT encoder with the multiple-choice head (zoo/heads.py, "choice"): each of a
question's 4 options is one sequence, the pooled [CLS] output gives one logit per option, and the
loss is the softmax cross-entropy over the 4 (Megatron's MultipleChoice). Weights come through
train.init_from (MiniLM imported, an HF BERT folder, a pretraining checkpoint; its masked-LM and
sentence-order heads are left out); everything else — layouts, precision, resume, logging, MFU —
is the trainer's.

Task keys (task.*): train_split (train), valid_split (dev), max_seq_length (512), max_qa_length
(128), eval_questions (0: the whole validation split; else an even spread of that many), and
generate / generate_seed / generate_articles / generate_words (write a RACE-format set generated
from the embedded corpus at data.path when it is missing). data.path is the RACE folder (original
layout or HF parquet/JSON) and data.tokenizer a megazoo tokenizer spec (BERT WordPiece).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from megazoo.core.train.builder import TaskBuilder
from megazoo.core.train.config import ConfigError
from megazoo.core.train.config_checks import fill_dataclass
from megazoo.core.train.data import EpochSource
from megazoo.core.train.evaluation import forward_outputs
from megazoo.tasks.race.data import NUM_CHOICES, load_race
from megazoo.tasks.race.evaluate import race_accuracy, race_metrics
from megazoo.tasks.race.inputs import RaceBatch, build_inputs
from megazoo.zoo.heads import choice_logits, head_loss

# tensors of a pretrained BERT that the RACE model does not have (its pretraining heads)
PRETRAINING_HEADS = ("lm_dense.", "lm_norm.", "lm_bias", "head.", "binary_head.")


@dataclass
class RaceTask:
    train_split: str = "train"
    valid_split: str = "dev"
    max_seq_length: int = 512
    max_qa_length: int = 128
    eval_questions: int = 0
    eval_batch: int = 8  # questions per forward pass in evaluation
    generate: bool = False
    generate_seed: int = 0
    generate_articles: int = 400  # training articles (dev and test get 15% each)
    generate_words: int = 80

    @classmethod
    def from_dict(cls, task: dict) -> "RaceTask":
        out = fill_dataclass(cls, task, "task", "task race")
        if out.max_seq_length < 3 or out.max_qa_length < 1:
            raise ConfigError(f"task.max_seq_length must be >= 3 and task.max_qa_length >= 1, got "
                              f"{out.max_seq_length} and {out.max_qa_length}")
        return out


class Questions:
    """Encoded questions as a trainer source: sample i -> the 4 option sequences and the label."""

    def __init__(self, inputs: RaceBatch):
        self.inputs = inputs

    def __len__(self) -> int:
        return len(self.inputs)

    def get(self, i: int) -> dict:
        x, i = self.inputs, i % len(self.inputs)  # wraps: a last validation batch is filled from the start
        return {"input_ids": x.input_ids[i], "token_type_ids": x.token_type_ids[i],
                "attention_mask": x.attention_mask[i], "labels": x.labels[i]}


class Shuffled:
    """Questions in a fresh seeded order every epoch (EpochSource over their indices)."""

    def __init__(self, questions: Questions, seed: int):
        self.questions, self.order = questions, EpochSource(list(range(len(questions))), seed)

    def __len__(self) -> int:
        return len(self.questions)

    def get(self, i: int) -> dict:
        return self.questions.get(self.order.get(i))


class RaceBuilder(TaskBuilder):
    def __init__(self, task: dict, model: dict, recompute: str = "none"):
        from megazoo.zoo.bert.builder import BertBuilder

        self.settings = RaceTask.from_dict(task)
        arch = model.get("arch", "bert")
        if arch != "bert":
            raise ConfigError(f"task race fine-tunes a BERT encoder, got model.arch={arch!r}; start from a BERT "
                              f"(train.init_from: an HF BERT folder, `megazoo import-hf` of MiniLM, a bert run)")
        model = {**model, "arch": "bert", "task_head": "choice", "add_lm_head": False, "add_binary_head": False}
        model.setdefault("add_pooler", True)
        bert = BertBuilder(model, recompute)
        bert.unused_ok = PRETRAINING_HEADS
        super().__init__(bert, asdict(self.settings))
        self.valid: RaceBatch | None = None
        self.valid_levels: list[str] = []

    # data --------------------------------------------------------------------------------------
    def encode(self, folder, split: str | None, tokenizer, limit: int = 0) -> tuple[RaceBatch, list]:
        s = self.settings
        questions = load_race(folder, split)
        if limit and len(questions) > limit:  # evenly spread, so both levels and many articles are in
            questions = [questions[i * len(questions) // limit] for i in range(limit)]
        if s.max_seq_length > self.seq_length:
            raise ConfigError(f"task.max_seq_length={s.max_seq_length} exceeds the encoder's {self.seq_length} "
                              f"positions; lower it")
        return build_inputs(questions, tokenizer, s.max_seq_length, s.max_qa_length), questions

    def check_data(self, data: dict) -> None:
        if not data.get("path"):
            raise ConfigError("task race needs data.path: a RACE folder (RACE/{train,dev,test}/{middle,high}/*.txt "
                              "or HF `race` parquet/JSON); or set task.generate=true to write a generated one there")
        if not Path(data["path"]).exists() and not self.settings.generate:
            raise ConfigError(f"data.path={data['path']!r}: no such RACE folder; give one, or set task.generate=true "
                              f"to write a generated set there (`megazoo task race generate` does the same)")

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        self.check_data(data)
        self.ensure_data(Path(data["path"]))
        s = self.settings
        train, _ = self.encode(data["path"], s.train_split, tokenizer)
        self.valid, valid_q = self.encode(data["path"], s.valid_split, tokenizer, s.eval_questions)
        self.valid_levels = [q.level for q in valid_q]
        return Shuffled(Questions(train), seed), Questions(self.valid)

    def ensure_data(self, path: Path) -> None:
        """With task.generate, write the generated set at `path` unless it is there. The trainer
        calls data_sources on rank 0 before the other ranks, so one rank writes it."""
        s = self.settings
        if path.exists() or not s.generate:
            return
        from megazoo.core.fs import atomic_folder
        from megazoo.tasks.race.generate import generate_race

        held_out = max(2, int(s.generate_articles * 0.15))
        with atomic_folder(path) as tmp:  # a scratch folder of its own, moved into place only when complete
            generate_race(tmp, seed=s.generate_seed, article_words=s.generate_words,
                          articles={"train": s.generate_articles, "dev": held_out, "test": held_out})

    def collate(self, samples: list) -> dict:
        return collate_choices(samples)

    # objective and metrics -----------------------------------------------------------------------
    def loss_counts(self, micro_batches: list[dict]) -> dict:
        return {"questions": sum((mb["labels"] != -100).sum() for mb in micro_batches)}

    def loss(self, out, mb: dict, counts: dict) -> torch.Tensor:
        return head_loss("choice", out.logits, mb)[0] / counts["questions"]

    def predict(self, chunks, ctx, inputs: RaceBatch, dtype=torch.float32, batch: int | None = None) -> torch.Tensor:
        """Softmax probabilities [N, 4] of every question, on every rank (collective)."""
        batch = batch or self.settings.eval_batch
        mbs = [micro_batch(inputs, slice(i, i + batch)) for i in range(0, len(inputs), batch)]
        if ctx.device.type != "cpu":
            mbs = [{k: v.to(ctx.device) for k, v in mb.items()} for mb in mbs]
        outs = forward_outputs(chunks, ctx, mbs, lambda out, mb: choice_logits(out.logits, NUM_CHOICES).float().cpu(),
                               self.hidden_size, dtype)
        return torch.softmax(torch.cat(outs).double(), -1) if outs else torch.zeros(0, NUM_CHOICES)

    def evaluate(self, chunks, ctx, dtype) -> dict:
        if self.valid is None or len(self.valid) == 0:
            return {}
        probs = self.predict(chunks, ctx, self.valid, dtype)
        return race_metrics(race_accuracy(probs.argmax(-1).tolist(), self.valid.labels.tolist(), self.valid_levels))


def micro_batch(inputs: RaceBatch, index) -> dict:
    """The questions at `index` as model inputs: their 4 options flattened into the batch
    ([n * 4, L']), L' the longest real length rounded up to a multiple of 8 (columns that are
    padding in every row change nothing; they cost time)."""
    b = inputs.select(index, multiple=8)
    return {"input_ids": b.input_ids.flatten(0, 1), "token_type_ids": b.token_type_ids.flatten(0, 1),
            "attention_mask": b.attention_mask.flatten(0, 1), "labels": b.labels.long()}


def collate_choices(samples: list) -> dict:
    """[mb, 4, L] multiple-choice samples (RaceBatch fields) -> [mb * 4, L'] sequences, L' the longest
    real length rounded up to a multiple of 8 (columns that are padding in every row change nothing;
    they cost time). Shared with tasks/story's knowledge ranker."""
    stacked = RaceBatch(*(torch.stack([s[k] for s in samples]) for k in
                          ("input_ids", "token_type_ids", "attention_mask", "labels")))
    return micro_batch(stacked, slice(None))


def build(task: dict, model: dict, recompute: str = "none") -> RaceBuilder:
    return RaceBuilder(task, model, recompute)
