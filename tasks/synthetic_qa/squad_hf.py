"""SQuAD as the Hugging Face `squad` / `squad_v2` datasets: rows {id, title, context, question,
answers: {text: [...], answer_start: [...]}}, one per question (parquet, arrow, a save_to_disk folder
or `hf:squad@validation`; eval/readers/hf_source.py), read into the SquadFile that squad.read_squad
gives for the official JSON.

squad_v2 marks an unanswerable question by empty answers (an `is_impossible` column, where a copy has
one, is used instead); the data is v2.0 when one question is unanswerable or the data set is named
squad_v2. Consecutive rows of one (title, context) are one paragraph, as in the JSON. The checks are
the JSON reader's: every answer_start points at its text, no id is used twice; a problem is
`FILE: row N: problem`.
"""

from __future__ import annotations

import os

from megazoo.eval.readers.hf_source import RowError, answer_pairs, dataset_name, is_hf_source, iter_rows
from megazoo.tasks.synthetic_qa.squad import Question, SquadFile, SquadFormatError

COLUMNS = ("id", "context", "question", "answers")
SCHEMA = "the Hugging Face `squad`/`squad_v2` schema: id, title, context, question, answers {text, answer_start}"

__all__ = ["is_hf_source", "read_squad_hf"]


class SquadRowError(RowError, SquadFormatError):
    """A bad row of a SQuAD-schema HF dataset: `FILE: row N: problem`."""


def read_squad_hf(path: str | os.PathLike, split: str | None = None) -> SquadFile:
    """Every question of one split of a SQuAD-schema dataset, in row order (see the module doc)."""
    questions, paragraphs, seen = [], [], {}
    v2 = "squad_v2" in dataset_name(path)
    for label, n, row, unit in iter_rows(path, COLUMNS, SCHEMA, split=split, optional=("title", "is_impossible"),
                                         error=SquadRowError):
        for key in ("context", "question"):
            if not isinstance(row[key], str):
                raise SquadRowError(label, n, f"{key} must be a string, got {row[key]!r:.60}")
        if not isinstance(row["id"], (str, int)) or isinstance(row["id"], bool):
            raise SquadRowError(label, n, f"id must be a string, got {row['id']!r:.60}")
        uid, context, title = str(row["id"]), row["context"], str(row.get("title") or "")
        if uid in seen:
            raise SquadRowError(label, n, f"question id {uid!r} is used twice (first at row {seen[uid]}); ids "
                                          f"must be unique")
        seen[uid] = n
        answers = answer_pairs(row["answers"], label, n, SquadRowError)
        for text, start in answers:
            if context[start:start + len(text)] != text:
                there = context[start:start + len(text)]
                raise SquadRowError(label, n, f"answers: answer_start {start} does not point at the answer "
                                              f"{text!r:.40}: the context has {there!r:.40} there")
        flag = row.get("is_impossible")
        impossible = bool(flag) if flag is not None else not answers
        if impossible and answers:
            raise SquadRowError(label, n, f"question {uid!r} is_impossible but has answers")
        v2 = v2 or impossible
        if not paragraphs or paragraphs[-1] != (title, context):
            paragraphs.append((title, context))
        questions.append(Question(uid, row["question"], context, answers, impossible, [], title,
                                  len(paragraphs) - 1, n))
    return SquadFile(questions, "v2.0" if v2 else "1.1", paragraphs)
