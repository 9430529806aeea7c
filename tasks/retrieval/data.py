"""Readers of DPR's release formats, as Megatron's `tasks/orqa` reads them.

    psgs_w100.tsv    a header `id<TAB>text<TAB>title`, then one passage per line (header skipped),
                     streamed (13 GB for DPR's 21M passages; iter_passages)
    nq-*.json        a JSON array of {"question", "answers": [...], "positive_ctxs": [{"title",
                     "text", "passage_id", ...}], "negative_ctxs": [...], "hard_negative_ctxs": [...]},
                     streamed (several GB for nq-train; a .gz is read directly)
    *-test.csv       headerless `question<TAB>['answer', ...]` (a Python list literal; read with
                     ast.literal_eval, never eval), streamed

Every file may also be its gzip (known by its first two bytes, whatever its name).

Every malformed input raises `RetrievalFormatError`, whose message is `file:line: problem`; a bad item
of a JSON array, whose line is not known, raises its subclass RetrievalItemError, `file: item N: problem`.
"""

from __future__ import annotations

import ast
import csv
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from megazoo.eval.readers.common import LineError, text_lines
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


PASSAGES = "a psgs_w100.tsv passage file: a header id<TAB>text<TAB>title, then passages"
QAS = "a DPR qas file: question<TAB>['answer', ...] per line"


def _blank(row: list[str]) -> bool:
    return not row or (len(row) == 1 and not row[0].strip())


def _numbered_passages(path) -> Iterator[tuple[int, Passage]]:
    """(line where the row starts, passage) for each passage of a psgs_w100.tsv-layout file, streamed."""
    csv.field_size_limit(min(sys.maxsize, 2 ** 31 - 1))
    # DPR writes the file with csv's tab dialect: quoted fields may hold tabs, quotes and newlines, so
    # csv reads the decoded lines and its line_num tells the line where each row ends
    rows = csv.reader((line for _, line in text_lines(path, PASSAGES, RetrievalFormatError)), delimiter="\t")
    header = next(rows, None)
    if header is None or _blank(header):
        if all(_blank(row) for row in rows):  # stops at the first non-blank row
            raise RetrievalFormatError(path, 1, "the file is empty; a psgs_w100.tsv file starts with the line "
                                                "id<TAB>text<TAB>title")
        header = header or []
    if tuple(c.strip() for c in header) != HEADER:
        raise RetrievalFormatError(path, 1, f"the header is {header[:3]!r}; a psgs_w100.tsv file starts with "
                                            f"the line id<TAB>text<TAB>title")
    count, ended = 0, rows.line_num
    for row in rows:
        line_no, ended = ended + 1, rows.line_num
        if _blank(row):
            continue
        if len(row) != 3:
            raise RetrievalFormatError(path, line_no, f"{len(row)} tab-separated fields; expected 3 (id, text, title)")
        try:
            pid = int(row[0])
        except ValueError:
            raise RetrievalFormatError(path, line_no, f"passage id {row[0]!r} is not an integer") from None
        count += 1
        yield line_no, Passage(pid, row[1], row[2])
    if not count:
        raise RetrievalFormatError(path, 1, "no passages after the header")


def iter_passages(path) -> Iterator[Passage]:
    """The passages of a psgs_w100.tsv-layout file (or its gzip, known by its first bytes), in file order,
    one at a time: time linear in the file, memory bounded by one row (DPR's file: 21M passages, 13 GB).
    A malformed row, a byte that is not UTF-8 or an empty file raises RetrievalFormatError(path, line,
    problem) when the stream reaches it. Ids are not checked for duplicates here (read_passages does)."""
    from megazoo.tasks.retrieval import data_hf  # a Hugging Face dataset in wiki_dpr's columns (data_hf.py)
    if data_hf.is_hf_source(path):
        yield from data_hf.iter_passages_hf(path)
        return
    for _, passage in _numbered_passages(path):
        yield passage


def read_passages(path) -> list[Passage]:
    """All passages of a psgs_w100.tsv-layout file, in file order (iter_passages), each id once. The
    duplicate check keeps a set of the ids seen: about 60 bytes per passage beyond the list itself."""
    from megazoo.tasks.retrieval import data_hf  # a Hugging Face dataset in wiki_dpr's columns (data_hf.py)
    if data_hf.is_hf_source(path):
        return data_hf.read_passages_hf(path)
    out: list[Passage] = []
    seen: set[int] = set()
    for line_no, p in _numbered_passages(path):
        if p.id in seen:
            raise RetrievalFormatError(path, line_no, f"passage id {p.id} appears twice")
        seen.add(p.id)
        out.append(p)
    return out


def iter_qas_csv(path) -> Iterator[Question]:
    """The questions of a DPR `*-test.csv` file (`question<TAB>[answers]`, no header; or its gzip), one
    line at a time (eval/readers/common.py text_lines)."""
    count = 0
    for line_no, line in text_lines(path, QAS, RetrievalFormatError):
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
        count += 1
        yield Question(question.strip(), answers)
    if not count:
        raise RetrievalFormatError(path, 1, "the file holds no questions")


def read_qas_csv(path) -> list[Question]:
    """All questions of a DPR `*-test.csv` file (see iter_qas_csv)."""
    return list(iter_qas_csv(path))


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
    from megazoo.tasks.retrieval import data_hf  # a Hugging Face dataset with DPR's columns (data_hf.py)
    if data_hf.is_hf_source(path):
        yield from data_hf.iter_dpr_hf(path, need_positive)
        return
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
    from megazoo.tasks.retrieval import data_hf  # DPR's columns or nq_open's, as a Hugging Face dataset
    if data_hf.is_hf_source(path):
        return data_hf.read_qas_hf(path)
    if str(path).endswith((".json", ".json.gz")):
        return read_dpr_json(path, need_positive=False)
    return read_qas_csv(path)
