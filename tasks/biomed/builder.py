"""BioMegatron's fine-tuning tasks on the core trainer: `task: biomed` in a recipe (entry point
megazoo.tasks:biomed), one builder for the three kinds.

    task.kind  head (zoo/heads.py)   data.path holds               validation metrics
    ner        token                 train.tsv devel.tsv test.tsv   precision, recall, f1 (entity-level)
    re         sequence ([CLS])      train.tsv dev.tsv test.tsv     precision, recall, f1 (CPR classes)
    qa         span                  train.json dev.json           strict_accuracy, lenient_accuracy, mrr

The encoder is a BERT started from train.init_from (MiniLM imported, an HF BERT folder, a
pretraining checkpoint; its masked-LM and sentence-order heads are dropped, and the pooler too for
the token and span heads, which Hugging Face's classes do not have). Layouts, precision, resume,
logging and checkpoints are the trainer's.

Task keys: kind; train_split (train), valid_split (dev); labels (NER: the label list, O first;
default O, B, I: BioBERT's one-type files); max_seq_length (128; QA 384); QA: doc_stride (128),
max_query_length (64), max_answer_length (30), n_best (20); eval_batch (rows per forward pass in
evaluation).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from megazoo.core.train.builder import TaskBuilder
from megazoo.core.train.config import ConfigError
from megazoo.core.train.config_checks import fill_dataclass
from megazoo.core.train.data import EpochSource
from megazoo.core.train.evaluation import forward_outputs
from megazoo.tasks.biomed.data import CHEMPROT_LABELS, SPLIT_FILES, read_split, split_file
from megazoo.tasks.biomed.evaluate import ner_metrics, qa_metrics, re_metrics
from megazoo.tasks.biomed.inputs import Encoded, decode_ner, decode_qa, encode_ner, encode_qa, encode_re
from megazoo.zoo.heads import head_count, head_loss, span_logits

KINDS = ("ner", "re", "qa")
HEADS = {"ner": "token", "re": "sequence", "qa": "span"}
PRETRAINING_HEADS = ("lm_dense.", "lm_norm.", "lm_bias", "head.", "binary_head.")


@dataclass
class BiomedTask:
    kind: str = ""
    train_split: str = "train"
    valid_split: str = "dev"
    labels: list = field(default_factory=lambda: ["O", "B", "I"])
    max_seq_length: int = 0  # 0: 128 (ner, re) or 384 (qa)
    doc_stride: int = 128
    max_query_length: int = 64
    max_answer_length: int = 30
    n_best: int = 20
    eval_batch: int = 32

    @classmethod
    def from_dict(cls, task: dict) -> "BiomedTask":
        out = fill_dataclass(cls, task, "task", "task biomed", unchecked=('labels',))
        if out.kind not in KINDS:
            raise ConfigError(f"task.kind must be one of {', '.join(KINDS)} (task biomed), got {out.kind!r}")
        if out.kind == "ner":
            labels = out.labels
            if not isinstance(labels, list) or len(labels) < 2 or not all(isinstance(x, str) for x in labels) \
                    or labels[0] != "O" or len(set(labels)) != len(labels):
                raise ConfigError(f"task.labels must be a list of distinct NER labels starting with O (e.g. "
                                  f"[O, B, I]), got {labels!r}")
        if not out.max_seq_length:
            out.max_seq_length = 384 if out.kind == "qa" else 128
        if out.max_seq_length < 8 or out.doc_stride < 1 or out.max_query_length < 1 or out.eval_batch < 1:
            raise ConfigError("task.max_seq_length must be >= 8 and task.doc_stride, task.max_query_length, "
                              "task.eval_batch >= 1")
        return out

    @property
    def num_labels(self) -> int:
        return {"ner": len(self.labels), "re": len(CHEMPROT_LABELS), "qa": 2}[self.kind]

    @property
    def label_names(self) -> list[str]:
        return {"ner": list(self.labels), "re": list(CHEMPROT_LABELS), "qa": []}[self.kind]


class Rows:
    """Encoded rows as a trainer source (sample i -> one row's tensors); wraps past the end."""

    def __init__(self, enc: Encoded):
        self.enc = enc

    def __len__(self) -> int:
        return len(self.enc)

    def get(self, i: int) -> dict:
        return self.enc.sample(i % len(self.enc))


class Shuffled:
    """Rows in a fresh seeded order every epoch (EpochSource over their indices)."""

    def __init__(self, rows: Rows, seed: int):
        self.rows, self.order = rows, EpochSource(list(range(len(rows))), seed)

    def __len__(self) -> int:
        return len(self.rows)

    def get(self, i: int) -> dict:
        return self.rows.get(self.order.get(i))


def trim(batch: dict, multiple: int = 8) -> dict:
    """Drop the columns that are padding in every row (rounded up to `multiple`): they change
    nothing (masked out of attention, -100 labels), they only cost time."""
    mask = batch["attention_mask"]
    length = min(mask.shape[-1], -(-max(int(mask.sum(-1).max()), 1) // multiple) * multiple)
    return {k: (v[:, :length] if v.dim() == 2 and v.shape[-1] == mask.shape[-1] else v) for k, v in batch.items()}


class BiomedBuilder(TaskBuilder):
    def __init__(self, task: dict, model: dict, recompute: str = "none"):
        from megazoo.zoo.bert.builder import BertBuilder

        self.settings = s = BiomedTask.from_dict(task)
        arch = model.get("arch", "bert")
        if arch != "bert":
            raise ConfigError(f"task biomed fine-tunes a BERT encoder, got model.arch={arch!r}; start from a BERT "
                              f"(train.init_from: an HF BERT folder, `megazoo import-hf` of MiniLM, a bert run)")
        head = HEADS[s.kind]
        model = {**model, "arch": "bert", "task_head": head, "num_labels": s.num_labels,
                 "label_names": s.label_names, "add_lm_head": False, "add_binary_head": False,
                 "add_pooler": head == "sequence"}
        bert = BertBuilder(model, recompute)
        bert.unused_ok = PRETRAINING_HEADS + (() if head == "sequence" else ("pooler.",))
        super().__init__(bert, asdict(s))
        self.head = head
        self.valid: Encoded | None = None
        self.valid_examples: list = []

    # data --------------------------------------------------------------------------------------
    def read(self, folder, split: str) -> list:
        return read_split(folder, self.settings.kind, split)

    def encode(self, examples: list, tokenizer) -> Encoded:
        s = self.settings
        if s.max_seq_length > self.seq_length:
            raise ConfigError(f"task.max_seq_length={s.max_seq_length} exceeds the encoder's {self.seq_length} "
                              f"positions; lower it")
        if s.kind == "ner":
            return encode_ner(examples, tokenizer, s.labels, s.max_seq_length)
        if s.kind == "re":
            return encode_re(examples, tokenizer, s.max_seq_length)
        return encode_qa(examples, tokenizer, s.max_seq_length, s.doc_stride, s.max_query_length)

    def check_data(self, data: dict) -> None:
        kind = self.settings.kind
        files = " ".join(sorted(set(SPLIT_FILES[kind].values())))
        if not data.get("path"):
            raise ConfigError(f"task biomed (kind {kind}) needs data.path: a folder with {files} "
                              f"(`megazoo task biomed generate OUT_DIR` writes one)")
        if not Path(data["path"]).is_dir():
            raise ConfigError(f"data.path={data['path']!r}: no such folder (a {kind} folder holds {files})")
        for split in (self.settings.train_split, self.settings.valid_split):  # parse now: errors before any rank starts
            try:
                examples = self.read(data["path"], split)
            except (ValueError, FileNotFoundError) as e:
                raise ConfigError(str(e)) from None
            if kind == "ner":
                self.check_labels(examples, split_file(data["path"], kind, split))

    def check_labels(self, sentences: list, path) -> None:
        known = set(self.settings.labels)
        for s in sentences:
            for k, label in enumerate(s.labels):
                if label not in known:
                    raise ConfigError(f"{path}:{s.line + k}: label {label!r} is not one of task.labels "
                                      f"{self.settings.labels}; list the file's labels there (O first)")

    def data_sources(self, data: dict, tokenizer, seed: int, num_samples) -> tuple:
        self.check_data(data)
        s = self.settings
        train = self.read(data["path"], s.train_split)
        if s.kind == "qa":  # windows that do not hold the answer still train (target [CLS]); unlocated answers do not
            train = [q for q in train if q.answer_start is not None]
        self.valid_examples = self.read(data["path"], s.valid_split)
        if not train or not self.valid_examples:
            raise ConfigError(f"data.path={data['path']!r}: the {s.train_split} or {s.valid_split} split is empty")
        self.valid = self.encode(self.valid_examples, tokenizer)
        return Shuffled(Rows(self.encode(train, tokenizer)), seed), Rows(self.valid)

    def collate(self, samples: list) -> dict:
        batch = trim({k: torch.stack([x[k] for x in samples]) for k in samples[0]})
        if "labels" not in batch:  # span targets are start/end positions; the pipeline hands labels on
            batch["labels"] = torch.full((len(samples),), -100)
        return batch

    # objective and metrics -----------------------------------------------------------------------
    def loss_counts(self, micro_batches: list[dict]) -> dict:
        return {"n": sum(head_count(self.head, mb) for mb in micro_batches)}

    def loss(self, out, mb: dict, counts: dict) -> torch.Tensor:
        return head_loss(self.head, out.logits, mb)[0] / counts["n"]

    def logits(self, chunks, ctx, enc: Encoded, dtype=torch.float32, batch: int | None = None) -> list[torch.Tensor]:
        """Every row's logits (float32 CPU, padding columns cut: NER/QA [len, ...], RE [labels]),
        on every rank (collective)."""
        batch = batch or self.settings.eval_batch
        mbs, lengths = [], []
        for i in range(0, len(enc), batch):
            mb = trim({k: v[i:i + batch] for k, v in (("input_ids", enc.input_ids), ("token_type_ids",
                                                     enc.token_type_ids), ("attention_mask", enc.attention_mask))})
            lengths.append(mb["attention_mask"].sum(-1).tolist())
            mb["labels"] = torch.full((mb["input_ids"].shape[0],), -100)  # the pipeline hands labels on; unused
            mbs.append({k: v.to(ctx.device) for k, v in mb.items()} if ctx.device.type != "cpu" else mb)
        outs = forward_outputs(chunks, ctx, mbs, lambda out, mb: out.logits.float().cpu(), self.hidden_size, dtype)
        rows = []
        for logits, lens in zip(outs, lengths):
            rows += [logits[j] if self.head == "sequence" else logits[j, :n] for j, n in enumerate(lens)]
        return rows

    def predict(self, chunks, ctx, examples: list, enc: Encoded, dtype=torch.float32, batch=None) -> list:
        """Per example: NER its word labels, RE its label, QA its ranked answers ({"text", "score"})."""
        rows = self.logits(chunks, ctx, enc, dtype, batch)
        s = self.settings
        if s.kind == "ner":
            return decode_ner(rows, enc, examples, s.labels)
        if s.kind == "re":
            return [CHEMPROT_LABELS[int(r.argmax())] for r in rows]
        starts, ends = zip(*(span_logits(r) for r in rows)) if rows else ((), ())
        return decode_qa(list(starts), list(ends), enc, examples, s.n_best, s.max_answer_length)

    def metrics(self, examples: list, predictions: list) -> dict:
        kind = self.settings.kind
        if kind == "ner":
            return ner_metrics(predictions, [list(x.labels) for x in examples])
        if kind == "re":
            return re_metrics(predictions, [x.label for x in examples])
        return qa_metrics([[a["text"] for a in p] for p in predictions], [list(x.answers) for x in examples])

    def evaluate(self, chunks, ctx, dtype) -> dict:
        if self.valid is None or not self.valid_examples:
            return {}
        return self.metrics(self.valid_examples, self.predict(chunks, ctx, self.valid_examples, self.valid, dtype))


def build(task: dict, model: dict, recompute: str = "none") -> BiomedBuilder:
    return BiomedBuilder(task, model, recompute)
