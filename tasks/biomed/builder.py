"""BioMegatron's fine-tuning tasks on the core trainer: `task: biomed` in a recipe (entry point
megazoo.tasks:biomed), one builder for the three kinds.

    task.kind  head (zoo/heads)      data.path holds               validation metrics
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

from dataclasses import dataclass, field
from pathlib import Path

import torch

from megazoo.core.train.config import ConfigError
from megazoo.core.train.rows import Rows, Shuffled
from megazoo.core.train.task_settings import TaskSettings
from megazoo.tasks.biomed.data import CHEMPROT_LABELS, SPLIT_FILES, read_split, split_file
from megazoo.tasks.biomed.evaluate import ner_metrics, qa_metrics, re_metrics
from megazoo.tasks.biomed.inputs import decode_ner, encode_ner, encode_re
from megazoo.zoo.bert.task import HeadTaskBuilder, SpanWindows
from megazoo.zoo.heads import span_logits
from megazoo.zoo.heads.encoded import Encoded
from megazoo.zoo.heads.qa import decode_qa, encode_qa

KINDS = ("ner", "re", "qa")
HEADS = {"ner": "token", "re": "sequence", "qa": "span"}


@dataclass
class BiomedTask(SpanWindows, TaskSettings):
    NAME = "biomed"
    CHOICES = {"kind": KINDS}
    BOUNDS = {"max_seq_length": 8, "eval_batch": 1}
    UNCHECKED = ("labels",)

    kind: str = ""
    train_split: str = "train"
    valid_split: str = "dev"
    labels: list = field(default_factory=lambda: ["O", "B", "I"])
    max_seq_length: int = 0  # 0: 128 (ner, re) or 384 (qa)
    eval_batch: int = 32

    def check(self) -> None:
        """NER labels: distinct, O first; max_seq_length 0 means the kind's default."""
        labels = self.labels
        if self.kind == "ner" and (not isinstance(labels, list) or len(labels) < 2
                                   or not all(isinstance(x, str) for x in labels) or labels[0] != "O"
                                   or len(set(labels)) != len(labels)):
            raise ConfigError(f"task.labels must be a list of distinct NER labels starting with O (e.g. "
                              f"[O, B, I]), got {labels!r}")
        if not self.max_seq_length:
            self.max_seq_length = 384 if self.kind == "qa" else 128

    @property
    def num_labels(self) -> int:
        return {"ner": len(self.labels), "re": len(CHEMPROT_LABELS), "qa": 2}[self.kind]

    @property
    def label_names(self) -> list[str]:
        return {"ner": list(self.labels), "re": list(CHEMPROT_LABELS), "qa": []}[self.kind]


class BiomedBuilder(HeadTaskBuilder):
    def __init__(self, task: dict, model: dict, recompute: str = "none"):
        self.settings = s = BiomedTask.from_dict(task)
        head = HEADS[s.kind]
        super().__init__(model, recompute, "task biomed fine-tunes a BERT encoder", head, num_labels=s.num_labels,
                         label_names=s.label_names, add_pooler=head == "sequence")
        self.valid: Encoded | None = None
        self.valid_examples: list = []

    # data --------------------------------------------------------------------------------------
    def read(self, folder, split: str) -> list:
        return read_split(folder, self.settings.kind, split)

    def encode(self, examples: list, tokenizer) -> Encoded:
        s = self.settings
        self.check_length()
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
                              f"(`megazoo task biomed data OUT_DIR` writes one)")
        from megazoo.eval.readers.hf_source import is_hf_source

        hf = is_hf_source(data["path"])  # a Hugging Face dataset of the kind's columns (data_hf.py)
        if not (hf or Path(data["path"]).is_dir()):
            raise ConfigError(f"data.path={data['path']!r}: no such folder (a {kind} folder holds {files})")
        for split in (self.settings.train_split, self.settings.valid_split):  # parse now: errors before any rank starts
            try:
                examples = self.read(data["path"], split)
            except (ValueError, FileNotFoundError) as e:
                raise ConfigError(str(e)) from None
            if kind == "ner":
                self.check_labels(examples, data["path"] if hf else split_file(data["path"], kind, split), hf)

    def check_labels(self, sentences: list, path, rows: bool = False) -> None:
        """Every label is one of task.labels; `rows`: the sentences are a dataset's rows (line: the row)."""
        known = set(self.settings.labels)
        for s in sentences:
            for k, label in enumerate(s.labels):
                if label not in known:
                    where = f"{path}: row {s.line}" if rows else f"{path}:{s.line + k}"
                    raise ConfigError(f"{where}: label {label!r} is not one of task.labels "
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

    # metrics -------------------------------------------------------------------------------------
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
