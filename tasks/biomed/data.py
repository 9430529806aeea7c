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

Every file is streamed (a line, or a SQuAD article, at a time; a gzip is read directly) and every
malformed input raises BiomedFormatError, `file:line: problem`; in a SQuAD file, whose parser gives no
lines, a bad article raises its subclass BiomedArticleError, `file: article N: problem`. Each kind also
takes its data as a Hugging Face dataset (data_hf.py; a problem is `FILE: row N: problem`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from megazoo.core.fs import read_utf8
from megazoo.eval.readers.common import LineError, MissingFile, text_lines
from megazoo.eval.readers.lined_json import ArticleError, member_items

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


class BiomedArticleError(ArticleError, BiomedFormatError):
    """A bad article of a streamed SQuAD-layout file, whose line is not known: `file: article N: problem`."""


NER = "BioBERT NER TSV: token<TAB>label lines, a blank line between sentences"
CHEMPROT = "BLUE ChemProt TSV: id<TAB>sentence<TAB>label"
SQUAD = 'SQuAD-v1.1 JSON: {"data": [{"paragraphs": [{"context", "qas"}]}]}'


def _lines(path: str | os.PathLike, what: str) -> Iterator[tuple[int, str]]:
    """(line number, line without its line end) for every line, blank or not, streamed; a file with
    no non-blank line is `file:1: the file is empty`, raised at its end."""
    found = False
    for number, raw in text_lines(path, what, BiomedFormatError):
        line = raw.rstrip("\n").rstrip("\r")
        found = found or bool(line.strip())
        yield number, line
    if not found:
        raise BiomedFormatError(path, 1, f"the file is empty (expected {what})")


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
    line: int  # 0 when read from a SQuAD file: the streamed reader knows the article, not the line
    article: int = 0  # the 1-based number of its article in the file (0: not read from a file)


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
def iter_ner_tsv(path: str | os.PathLike) -> Iterator[NerSentence]:
    """The sentences of a BioBERT NER file (`token<TAB>label` lines, blank lines between sentences), one
    at a time, streamed."""
    tokens: list[str] = []
    labels: list[str] = []
    first = 0
    for number, line in _lines(path, NER):
        if not line.strip():
            if tokens:
                yield NerSentence(tuple(tokens), tuple(labels), first)
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
        check_tag(label, path, number)
        if not tokens:
            first = number
        tokens.append(token)
        labels.append(label)
    if tokens:
        yield NerSentence(tuple(tokens), tuple(labels), first)


def check_tag(label: str, path, number: int) -> None:
    """A NER label must be B, I, O, B-Type or I-Type (a TSV line's, or a dataset row's: data_hf.py)."""
    if not _TAG.match(label):
        raise BiomedFormatError(path, number, f"label {label!r} is not in the B/I/O scheme "
                                              f"(B, I, O, or B-Type, I-Type)")


def read_ner_tsv(path: str | os.PathLike) -> list[NerSentence]:
    """All sentences of a BioBERT NER file (iter_ner_tsv), or of a Hugging Face dataset of tokens and
    tags (data_hf.py)."""
    from megazoo.tasks.biomed import data_hf  # BLURB-style tokens/ner_tags rows (data_hf.py)
    if data_hf.is_hf_source(path):
        return data_hf.read_ner_hf(path)
    return list(iter_ner_tsv(path))


def ner_label_set(sentences: list[NerSentence]) -> list[str]:
    """The labels used, O first, then each type's B and I (sorted by type): a model's label list."""
    types = sorted({lab[2:] if "-" in lab else "" for s in sentences for lab in s.labels if lab != "O"})
    return ["O"] + [f"{p}-{t}" if t else p for t in types for p in ("B", "I")]


# ChemProt ---------------------------------------------------------------------------------------
def iter_chemprot_tsv(path: str | os.PathLike) -> Iterator[Relation]:
    """The rows of a BLUE ChemProt file (`id<TAB>sentence<TAB>label`), one at a time, streamed."""
    for number, line in _lines(path, CHEMPROT):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise BiomedFormatError(path, number, f"{len(parts)} tab-separated columns; a ChemProt row is "
                                                  f"id<TAB>sentence<TAB>label")
        uid, sentence, label = (p.strip() for p in parts)
        if number == 1 and (uid, label) == ("index", "label"):
            continue  # BLUE's header
        yield relation(uid, sentence, label, path, number)


def relation(uid: str, sentence: str, label: str, path, number: int) -> Relation:
    """A checked ChemProt example (a TSV line's fields, or a dataset row's: data_hf.py)."""
    if label not in CHEMPROT_LABELS:
        raise BiomedFormatError(path, number, f"label {label!r} is not one of {', '.join(CHEMPROT_LABELS)}")
    if BOTH_MASK not in sentence and not all(m in sentence for m in MASKS):
        missing = [m for m in MASKS if m not in sentence]
        raise BiomedFormatError(path, number, f"the sentence lacks the entity mask {' and '.join(missing)}")
    return Relation(uid, sentence, label, number)


def read_chemprot_tsv(path: str | os.PathLike) -> list[Relation]:
    """All rows of a BLUE ChemProt file (iter_chemprot_tsv), or of a Hugging Face dataset of its
    columns (data_hf.py)."""
    from megazoo.tasks.biomed import data_hf  # the TSV's index/sentence/label columns (data_hf.py)
    if data_hf.is_hf_source(path):
        return data_hf.read_chemprot_hf(path)
    return list(iter_chemprot_tsv(path))


# BioASQ / SQuAD ---------------------------------------------------------------------------------
def _field(obj, key: str, kind, where: tuple, what: str):
    """obj[key] checked to be of `kind`; `where` is (path, article number) for the error."""
    if not isinstance(obj, dict) or key not in obj:
        raise BiomedArticleError(*where, f"{what} has no {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise BiomedArticleError(*where, f"{what}'s {key!r} must be {getattr(kind, '__name__', kind)}, "
                                         f"got {type(value).__name__}")
    return value


def iter_squad_json(path: str | os.PathLike) -> Iterator[QAQuestion]:
    """The questions of a SQuAD-v1.1 / BioASQ factoid file (or its gzip), in file order, streamed one
    article at a time (eval/readers/lined_json.py member_items): memory bounded by one article."""
    for n, article in member_items(path, "data", SQUAD, BiomedFormatError, BiomedArticleError):
        where = (path, n)
        for para in _field(article, "paragraphs", list, where, "an article"):
            context = _field(para, "context", str, where, "a paragraph")
            for qa in _field(para, "qas", list, where, "a paragraph"):
                uid = _field(qa, "id", (str, int), where, "a question")
                question = _field(qa, "question", str, where, "a question")
                answers = qa.get("answers", []) if isinstance(qa, dict) else []
                if not isinstance(answers, list):
                    raise BiomedArticleError(*where, f"question {uid!r}: 'answers' must be a list")
                texts, start, located = [], None, None
                for ans in answers:
                    ans_text = _field(ans, "text", str, where, f"an answer of question {uid!r}")
                    texts.append(ans_text)
                    if "answer_start" not in ans:
                        continue
                    s = ans["answer_start"]
                    if not isinstance(s, int) or isinstance(s, bool):
                        raise BiomedArticleError(*where, f"question {uid!r}: answer_start must be an integer, got {s!r}")
                    if context[s:s + len(ans_text)] != ans_text:
                        raise BiomedArticleError(*where, f"question {uid!r}: answer_start {s} does not match the "
                                                         f"answer text {ans_text!r:.40}: the context has "
                                                         f"{context[s:s + len(ans_text)]!r:.40} there")
                    if start is None:
                        start, located = s, ans_text
                yield QAQuestion(str(uid), question, context, tuple(texts), start, located, 0, n)


def read_squad_json(path: str | os.PathLike) -> list[QAQuestion]:
    """All questions of a SQuAD-v1.1 / BioASQ factoid file, in file order (iter_squad_json)."""
    from megazoo.tasks.biomed import data_hf  # a Hugging Face dataset in the squad schema (data_hf.py)
    if data_hf.is_hf_source(path):
        return data_hf.read_squad_hf(path)
    return list(iter_squad_json(path))


def read_split(folder: str | os.PathLike, kind: str, split: str):
    """The examples of one split of a release folder (or of a single file)."""
    from megazoo.tasks.biomed import data_hf  # a Hugging Face dataset of the kind's columns (data_hf.py)
    if data_hf.is_hf_source(folder):
        read = {"ner": data_hf.read_ner_hf, "re": data_hf.read_chemprot_hf, "qa": data_hf.read_squad_hf}[kind]
        return read(folder, split)
    path = split_file(folder, kind, split)
    return {"ner": read_ner_tsv, "re": read_chemprot_tsv, "qa": read_squad_json}[kind](path)
