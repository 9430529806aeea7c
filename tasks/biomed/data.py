"""Readers for the three BioMegatron fine-tuning layouts (as BioBERT and BLUE release them).

NER (BioBERT-preprocessed BC5CDR, NCBI-disease): `train.tsv`, `devel.tsv`, `test.tsv`; one
`token<TAB>label` per line, a blank line between sentences; labels B, I, O (one entity type per
corpus) or B-Type / I-Type (several types in one file). An I after O is accepted: the metric reads
it as seqeval does (it opens an entity).

ChemProt (BLUE): `train.tsv`, `dev.tsv`, `test.tsv`; `id<TAB>sentence<TAB>label`, the pair's
entities masked as @CHEMICAL$ and @GENE$ (@CHEM-GENE$ where one span is both), labels CPR:3, CPR:4,
CPR:5, CPR:6, CPR:9 and false. A header line `index<TAB>sentence<TAB>label` (BLUE's test.tsv) is skipped.

BioASQ factoid (BioBERT release): SQuAD-v1.1 JSON, `data[].paragraphs[].{context,
qas[].{id, question, answers[{text, answer_start}]}}`; the answers of a question are its gold
synonyms. An answer without `answer_start` is a synonym that is only matched, not located.

Every malformed input raises BiomedFormatError, `file:line: problem`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from megazoo.core.fs import read_utf8
from megazoo.eval.readers.common import LineError, MissingFile
from megazoo.eval.readers.lined_json import load_lined_json

CHEMPROT_LABELS = ("false", "CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9")  # id 0 is the negative class
MASKS = ("@CHEMICAL$", "@GENE$")
BOTH_MASK = "@CHEM-GENE$"
_TAG = re.compile(r"^(O|[BI](-[^\s]+)?)$")
# the files of each kind's release layout, by split
SPLIT_FILES = {"ner": {"train": "train.tsv", "dev": "devel.tsv", "devel": "devel.tsv", "test": "test.tsv"},
               "re": {"train": "train.tsv", "dev": "dev.tsv", "devel": "dev.tsv", "test": "test.tsv"},
               "qa": {"train": "train.json", "dev": "dev.json", "devel": "dev.json", "test": "test.json"}}


class BiomedFormatError(LineError):
    """A file that is not in its release layout; the message is `file:line: problem`."""


def read_text(path: str | os.PathLike, what: str) -> str:
    """The whole file as UTF-8 text: a missing file, undecodable bytes (`file:line: not valid
    UTF-8`) or an empty file are one-line user errors naming the file."""
    if not os.path.isfile(path):
        raise MissingFile(f"{os.fspath(path)}: no such file (expected {what})")
    text = read_utf8(path, BiomedFormatError)
    if not text.strip():
        raise BiomedFormatError(path, 1, f"the file is empty (expected {what})")
    return text


@dataclass(frozen=True)
class NerSentence:
    tokens: tuple[str, ...]
    labels: tuple[str, ...]
    line: int  # the line of its first token


@dataclass(frozen=True)
class Relation:
    id: str
    sentence: str
    label: str
    line: int


@dataclass(frozen=True)
class QAQuestion:
    id: str
    question: str
    context: str
    answers: tuple[str, ...]  # gold synonyms (may be empty in a test file without answers)
    answer_start: int | None  # the first located answer's character offset, None when none is located
    answer_text: str | None  # that answer's text
    line: int


def split_file(folder: str | os.PathLike, kind: str, split: str) -> Path:
    """The file of `split` in a release folder (or `folder` itself when it is a file)."""
    path = Path(folder)
    if path.is_file():
        return path
    if split not in SPLIT_FILES[kind]:
        raise ValueError(f"unknown split {split!r} for {kind}; use one of {', '.join(SPLIT_FILES[kind])}")
    target = path / SPLIT_FILES[kind][split]
    if not target.is_file():
        raise MissingFile(f"{target}: no such file (a {kind} folder holds "
                                f"{', '.join(sorted(set(SPLIT_FILES[kind].values())))})")
    return target


# NER ------------------------------------------------------------------------------------------
def read_ner_tsv(path: str | os.PathLike) -> list[NerSentence]:
    """The sentences of a BioBERT NER file (`token<TAB>label` lines, blank lines between sentences)."""
    text = read_text(path, "BioBERT NER TSV: token<TAB>label lines, a blank line between sentences")
    out: list[NerSentence] = []
    tokens: list[str] = []
    labels: list[str] = []
    first = 0
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            if tokens:
                out.append(NerSentence(tuple(tokens), tuple(labels), first))
                tokens, labels = [], []
            continue
        if "\t" not in line:
            raise BiomedFormatError(path, number, f"no tab in {line!r:.60}; a NER line is token<TAB>label")
        parts = line.split("\t")
        if len(parts) != 2:
            raise BiomedFormatError(path, number, f"{len(parts)} tab-separated columns; a NER line is token<TAB>label")
        token, label = parts[0].strip(), parts[1].strip()
        if not token:
            raise BiomedFormatError(path, number, "an empty token before the tab")
        if not _TAG.match(label):
            raise BiomedFormatError(path, number, f"label {label!r} is not in the B/I/O scheme "
                                                  f"(B, I, O, or B-Type, I-Type)")
        if not tokens:
            first = number
        tokens.append(token)
        labels.append(label)
    if tokens:
        out.append(NerSentence(tuple(tokens), tuple(labels), first))
    return out


def ner_label_set(sentences: list[NerSentence]) -> list[str]:
    """The labels used, O first, then each type's B and I (sorted by type): a model's label list."""
    types = sorted({lab[2:] if "-" in lab else "" for s in sentences for lab in s.labels if lab != "O"})
    return ["O"] + [f"{p}-{t}" if t else p for t in types for p in ("B", "I")]


# ChemProt ---------------------------------------------------------------------------------------
def read_chemprot_tsv(path: str | os.PathLike) -> list[Relation]:
    """The rows of a BLUE ChemProt file (`id<TAB>sentence<TAB>label`)."""
    text = read_text(path, "BLUE ChemProt TSV: id<TAB>sentence<TAB>label")
    out = []
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise BiomedFormatError(path, number, f"{len(parts)} tab-separated columns; a ChemProt row is "
                                                  f"id<TAB>sentence<TAB>label")
        uid, sentence, label = (p.strip() for p in parts)
        if number == 1 and (uid, label) == ("index", "label"):
            continue  # BLUE's header
        if label not in CHEMPROT_LABELS:
            raise BiomedFormatError(path, number, f"label {label!r} is not one of {', '.join(CHEMPROT_LABELS)}")
        if BOTH_MASK not in sentence and not all(m in sentence for m in MASKS):
            missing = [m for m in MASKS if m not in sentence]
            raise BiomedFormatError(path, number, f"the sentence lacks the entity mask {' and '.join(missing)}")
        out.append(Relation(uid, sentence, label, number))
    return out


# BioASQ / SQuAD ---------------------------------------------------------------------------------
def _field(obj, key: str, kind, path, what: str):
    line = getattr(obj, "line", 1)
    if not isinstance(obj, dict) or key not in obj:
        raise BiomedFormatError(path, line, f"{what} has no {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise BiomedFormatError(path, line, f"{what}'s {key!r} must be {getattr(kind, '__name__', kind)}, "
                                            f"got {type(value).__name__}")
    return value


def read_squad_json(path: str | os.PathLike) -> list[QAQuestion]:
    """The questions of a SQuAD-v1.1 / BioASQ factoid file, in file order."""
    root = load_lined_json(path, "SQuAD-v1.1 JSON", BiomedFormatError)
    out = []
    for article in _field(root, "data", list, path, "the file"):
        for para in _field(article, "paragraphs", list, path, "an article"):
            context = _field(para, "context", str, path, "a paragraph")
            for qa in _field(para, "qas", list, path, "a paragraph"):
                uid = _field(qa, "id", (str, int), path, "a question")
                question = _field(qa, "question", str, path, "a question")
                answers = qa.get("answers", []) if isinstance(qa, dict) else []
                if not isinstance(answers, list):
                    raise BiomedFormatError(path, qa.line, "a question's 'answers' must be a list")
                texts, start, located = [], None, None
                for ans in answers:
                    ans_text = _field(ans, "text", str, path, "an answer")
                    texts.append(ans_text)
                    if "answer_start" not in ans:
                        continue
                    s = ans["answer_start"]
                    if not isinstance(s, int) or isinstance(s, bool):
                        raise BiomedFormatError(path, ans.line, f"answer_start must be an integer, got {s!r}")
                    if context[s:s + len(ans_text)] != ans_text:
                        raise BiomedFormatError(path, ans.line, f"answer_start {s} does not match the answer text "
                                                                f"{ans_text!r:.40}: the context has "
                                                                f"{context[s:s + len(ans_text)]!r:.40} there")
                    if start is None:
                        start, located = s, ans_text
                out.append(QAQuestion(str(uid), question, context, tuple(texts), start, located, qa.line))
    return out


def read_split(folder: str | os.PathLike, kind: str, split: str):
    """The examples of one split of a release folder (or of a single file)."""
    path = split_file(folder, kind, split)
    return {"ner": read_ner_tsv, "re": read_chemprot_tsv, "qa": read_squad_json}[kind](path)
