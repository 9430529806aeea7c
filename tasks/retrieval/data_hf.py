"""DPR's data as Hugging Face datasets (parquet, arrow, a save_to_disk folder or `hf:NAME[:CONFIG]@SPLIT`;
eval/readers/hf_source.py), read into the records of data.py:

    passages    `wiki_dpr` {id, text, title} (id a string of digits, as in psgs_w100.tsv; other
                columns such as `embeddings` are not read)
    questions   DPR's json columns {question, answers, positive_ctxs, negative_ctxs, hard_negative_ctxs}
                (contexts {title, text, passage_id, ...}), or `nq_open` {question, answer} for the
                evaluation questions (read_qas takes either)

Rows are streamed in Arrow batches (memory bounded by a batch); a problem is `FILE: row N: problem`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from megazoo.eval.readers.hf_source import RowError, is_hf_source, iter_rows
from megazoo.tasks.retrieval.data import Passage, Question, RetrievalFormatError

PASSAGES = "the Hugging Face `wiki_dpr` schema: id, text, title"
DPR = "DPR's json columns: question, answers, positive_ctxs, negative_ctxs, hard_negative_ctxs"
QAS = "DPR's json columns (question, answers, ...) or the Hugging Face `nq_open` schema: question, answer"
CONTEXTS = ("positive_ctxs", "negative_ctxs", "hard_negative_ctxs")

__all__ = ["is_hf_source", "iter_dpr_hf", "iter_passages_hf", "read_passages_hf", "read_qas_hf"]


class RetrievalRowError(RowError, RetrievalFormatError):
    """A bad row of an HF dataset of DPR data: `FILE: row N: problem`."""


def _numbered_passages(path, split) -> Iterator[tuple[str, int, Passage]]:
    for label, n, row, _ in iter_rows(path, ("id", "text", "title"), PASSAGES, split=split, error=RetrievalRowError):
        try:
            pid = int(row["id"])
        except (TypeError, ValueError):
            raise RetrievalRowError(label, n, f"passage id {row['id']!r:.40} is not an integer") from None
        if not isinstance(row["text"], str) or not isinstance(row["title"], str):
            raise RetrievalRowError(label, n, "text and title must be strings")
        yield label, n, Passage(pid, row["text"], row["title"])


def iter_passages_hf(path: str | os.PathLike, split: str | None = None) -> Iterator[Passage]:
    """The passages of a `wiki_dpr`-schema dataset in row order, one at a time (ids not checked for
    duplicates, as data.iter_passages)."""
    for _, _, passage in _numbered_passages(path, split):
        yield passage


def read_passages_hf(path: str | os.PathLike, split: str | None = None) -> list[Passage]:
    """All passages of a `wiki_dpr`-schema dataset, each id once (as data.read_passages)."""
    out: list[Passage] = []
    seen: set[int] = set()
    for label, n, p in _numbered_passages(path, split):
        if p.id in seen:
            raise RetrievalRowError(label, n, f"passage id {p.id} appears twice")
        seen.add(p.id)
        out.append(p)
    return out


def _contexts(value, key: str, label: str, n: int) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise RetrievalRowError(label, n, f"`{key}` must be a list of {{title, text}} objects")
    for c in value:
        if not isinstance(c, dict) or not isinstance(c.get("text"), str):
            raise RetrievalRowError(label, n, f"an entry of `{key}` has no `text` string")
    return [{"title": str(c.get("title") or ""), "text": c["text"], "passage_id": c.get("passage_id")} for c in value]


def _answers(value, key: str, label: str, n: int) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise RetrievalRowError(label, n, f"`{key}` must be a list of strings")
    return value


def iter_dpr_hf(path: str | os.PathLike, need_positive: bool = True, split: str | None = None) -> Iterator[Question]:
    """The questions of a dataset with DPR's json columns, one at a time (as data.iter_dpr_json;
    `need_positive`: the positive_ctxs column must be there and hold a context in every row)."""
    needed = ("question", "answers") + (("positive_ctxs",) if need_positive else ())
    for label, n, row, _ in iter_rows(path, needed, DPR, split=split, optional=CONTEXTS, error=RetrievalRowError):
        yield _dpr_question(row, label, n, need_positive)


def _dpr_question(row: dict, label: str, n: int, need_positive: bool) -> Question:
    q = row["question"]
    if not isinstance(q, str) or not q.strip():
        raise RetrievalRowError(label, n, "the row has no `question` string")
    answers = _answers(row["answers"], "answers", label, n)
    if need_positive and not row.get("positive_ctxs"):
        raise RetrievalRowError(label, n, "the row has no `positive_ctxs` (a non-empty list); supervised training "
                                          "needs a positive passage per question")
    ctxs = [_contexts(row.get(key), key, label, n) for key in CONTEXTS]
    return Question(q.strip(), answers, *ctxs)


def read_qas_hf(path: str | os.PathLike, split: str | None = None) -> list[Question]:
    """Evaluation questions from DPR's json columns (positives not needed) or `nq_open` {question,
    answer} (a non-empty answer list, as a DPR *-test.csv row)."""
    out: list[Question] = []
    rows = iter_rows(path, ("question",), QAS, split=split, optional=("answers", "answer") + CONTEXTS,
                     error=RetrievalRowError)
    for label, n, row, _ in rows:
        if "answers" in row:
            out.append(_dpr_question(row, label, n, need_positive=False))
            continue
        if "answer" not in row:
            raise RetrievalRowError(label, None, f"has no column 'answers' or 'answer' (expected {QAS})")
        q, answers = row["question"], _answers(row["answer"], "answer", label, n)
        if not isinstance(q, str) or not q.strip():
            raise RetrievalRowError(label, n, "the row has no `question` string")
        if not answers:
            raise RetrievalRowError(label, n, "the answer list is empty")
        out.append(Question(q.strip(), answers))
    return out
