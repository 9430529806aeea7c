"""Readers of DPR's release formats, as Megatron's `tasks/orqa` reads them.

    psgs_w100.tsv    a header `id<TAB>text<TAB>title`, then one passage per line (header skipped)
    nq-*.json        a JSON array of {"question", "answers": [...], "positive_ctxs": [{"title",
                     "text", "passage_id", ...}], "negative_ctxs": [...], "hard_negative_ctxs": [...]},
                     streamed (several GB for nq-train; a .gz is read directly)
    *-test.csv       headerless `question<TAB>['answer', ...]` (a Python list literal; read with
                     ast.literal_eval, never eval)

Every malformed input raises `RetrievalFormatError`, whose message is `file:line: problem`; a bad item
of a JSON array, whose line is not known, raises its subclass RetrievalItemError, `file: item N: problem`.
"""

from __future__ import annotations

import ast
import csv
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from megazoo.eval.readers.common import LineError
from megazoo.eval.readers.json_stream import ItemError, array_items

HEADER = ("id", "text", "title")


class RetrievalFormatError(LineError):
    """A retrieval data file that cannot be read; the message is `file:line: problem`."""


@dataclass(frozen=True)
class Passage:
    id: int
    text: str
    title: str


@dataclass
class Question:
    question: str
    answers: list[str]
    positives: list[dict] = field(default_factory=list)  # {"title", "text", "passage_id"?}
    negatives: list[dict] = field(default_factory=list)
    hard_negatives: list[dict] = field(default_factory=list)


def _exists(path, what: str) -> Path:
    """The path of an existing UTF-8 file (a binary file fails here with the line it breaks on)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (expected {what})")
    from megazoo.core.fs import read_utf8

    read_utf8(path, RetrievalFormatError)
    return path


def read_passages(path) -> list[Passage]:
    """All passages of a psgs_w100.tsv-layout file, in file order."""
    path = _exists(path, "a psgs_w100.tsv passage file: a header id<TAB>text<TAB>title, then passages")
    csv.field_size_limit(min(sys.maxsize, 2 ** 31 - 1))
    out: list[Passage] = []
    if not path.read_text(encoding="utf-8").strip():
        raise RetrievalFormatError(path, 1, "the file is empty; a psgs_w100.tsv file starts with the line "
                                            "id<TAB>text<TAB>title")
    with open(path, encoding="utf-8", newline="") as f:
        # DPR writes the file with csv's tab dialect: quoted fields may hold tabs and quotes
        for line_no, row in enumerate(csv.reader(f, delimiter="\t"), 1):
            if line_no == 1:
                if tuple(c.strip() for c in row) != HEADER:
                    raise RetrievalFormatError(path, 1, f"the header is {row[:3]!r}; a psgs_w100.tsv file starts with "
                                                        f"the line id<TAB>text<TAB>title")
                continue
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != 3:
                raise RetrievalFormatError(path, line_no, f"{len(row)} tab-separated fields; expected 3 "
                                                          f"(id, text, title)")
            try:
                pid = int(row[0])
            except ValueError:
                raise RetrievalFormatError(path, line_no, f"passage id {row[0]!r} is not an integer") from None
            out.append(Passage(pid, row[1], row[2]))
    if not out:
        raise RetrievalFormatError(path, 1, "no passages after the header")
    seen: set[int] = set()
    for i, p in enumerate(out):
        if p.id in seen:
            raise RetrievalFormatError(path, i + 2, f"passage id {p.id} appears twice")
        seen.add(p.id)
    return out


def read_qas_csv(path) -> list[Question]:
    """Questions of a DPR `*-test.csv` file (`question<TAB>[answers]`, no header)."""
    path = _exists(path, "a DPR qas file: question<TAB>['answer', ...] per line")
    out: list[Question] = []
    with open(path, encoding="utf-8", newline="") as f:
        for line_no, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            if "\t" not in line:
                raise RetrievalFormatError(path, line_no, "no tab: expected question<TAB>['answer', ...]")
            question, raw = line.rsplit("\t", 1)
            try:
                answers = ast.literal_eval(raw.strip())
            except (ValueError, SyntaxError):
                raise RetrievalFormatError(path, line_no, f"answers {raw.strip()[:60]!r} are not a Python list "
                                                          f"literal") from None
            if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
                raise RetrievalFormatError(path, line_no, f"answers must be a list of strings, got "
                                                          f"{type(answers).__name__} {raw.strip()[:60]}")
            if not answers:
                raise RetrievalFormatError(path, line_no, "the answer list is empty")
            out.append(Question(question.strip(), answers))
    if not out:
        raise RetrievalFormatError(path, 1, "the file holds no questions")
    return out


class RetrievalItemError(ItemError, RetrievalFormatError):
    """A bad item of a DPR JSON array file, whose line is not known: `file: item N: problem`."""


DPR_JSON = "a DPR nq-*.json file: a JSON array of {question, answers, positive_ctxs, ...}"


def _contexts(item: dict, key: str, path, n: int) -> list[dict]:
    ctxs = item.get(key, [])
    if not isinstance(ctxs, list):
        raise RetrievalItemError(path, n, f"`{key}` must be a list of {{title, text}} objects")
    for c in ctxs:
        if not isinstance(c, dict) or not isinstance(c.get("text"), str):
            raise RetrievalItemError(path, n, f"an entry of `{key}` has no `text` string")
    return [{"title": str(c.get("title") or ""), "text": c["text"], "passage_id": c.get("passage_id")}
            for c in ctxs]


def iter_dpr_json(path, need_positive: bool = True) -> Iterator[Question]:
    """The questions of a DPR `nq-{train,dev}.json` file (or its .gz), one at a time, streamed: time
    linear in the file, memory bounded by one question (eval/readers/json_stream.py).
    `need_positive`: every item must carry `positive_ctxs` with at least one context (training reads
    positive_ctxs[0], as Megatron)."""
    count = 0
    for n, item in array_items(path, DPR_JSON, RetrievalFormatError, RetrievalItemError):
        if not isinstance(item, dict):
            raise RetrievalItemError(path, n, f"the item is not a JSON object (got {type(item).__name__})")
        q, answers = item.get("question"), item.get("answers")
        if not isinstance(q, str) or not q.strip():
            raise RetrievalItemError(path, n, "the item has no `question` string")
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise RetrievalItemError(path, n, "`answers` must be a list of strings")
        if need_positive and not item.get("positive_ctxs"):
            raise RetrievalItemError(path, n, "the item has no `positive_ctxs` (a non-empty list); supervised "
                                              "training needs a positive passage per question")
        count += 1
        yield Question(q.strip(), answers, _contexts(item, "positive_ctxs", path, n),
                       _contexts(item, "negative_ctxs", path, n), _contexts(item, "hard_negative_ctxs", path, n))
    if not count:
        raise RetrievalFormatError(path, 1, "the JSON array holds no questions")


def read_dpr_json(path, need_positive: bool = True) -> list[Question]:
    """All questions of a DPR `nq-{train,dev}.json` file (see iter_dpr_json)."""
    return list(iter_dpr_json(path, need_positive))


def read_qas(path) -> list[Question]:
    """Evaluation questions from either DPR layout: `*.json` or `*.json.gz` (positives not needed) or the TSV."""
    if str(path).endswith((".json", ".json.gz")):
        return read_dpr_json(path, need_positive=False)
    return read_qas_csv(path)
