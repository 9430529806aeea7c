"""BioASQ factoid / SQuAD-v1.1 questions from a Hugging Face dataset in the `squad` schema: rows {id,
title, context, question, answers: {text: [...], answer_start: [...]}} (parquet, arrow, a save_to_disk
folder or `hf:NAME@SPLIT`; eval/readers/hf_source.py), read into the QAQuestions that
data.read_squad_json gives for the JSON. Every answer is a gold synonym; the first one is located, and
its answer_start must point at its text. A problem is `FILE: row N: problem`.
"""

from __future__ import annotations

import os

from megazoo.eval.readers.hf_source import RowError, answer_pairs, is_hf_source, iter_rows
from megazoo.tasks.biomed.data import BiomedFormatError, QAQuestion

COLUMNS = ("id", "context", "question", "answers")
SCHEMA = "the Hugging Face `squad` schema: id, title, context, question, answers {text, answer_start}"

__all__ = ["is_hf_source", "read_squad_hf"]


class BiomedRowError(RowError, BiomedFormatError):
    """A bad row of a SQuAD-schema HF dataset: `FILE: row N: problem`."""


def read_squad_hf(path: str | os.PathLike, split: str | None = None) -> list[QAQuestion]:
    """The questions of one split (dev -> validation) of a SQuAD-schema dataset, in row order."""
    out = []
    for label, n, row, unit in iter_rows(path, COLUMNS, SCHEMA, split=split, error=BiomedRowError):
        for key in ("context", "question"):
            if not isinstance(row[key], str):
                raise BiomedRowError(label, n, f"{key} must be a string, got {row[key]!r:.60}")
        if not isinstance(row["id"], (str, int)) or isinstance(row["id"], bool):
            raise BiomedRowError(label, n, f"id must be a string, got {row['id']!r:.60}")
        context = row["context"]
        answers = answer_pairs(row["answers"], label, n, BiomedRowError)
        for text, start in answers:
            if context[start:start + len(text)] != text:
                raise BiomedRowError(label, n, f"answer_start {start} does not match the answer text {text!r:.40}: "
                                               f"the context has {context[start:start + len(text)]!r:.40} there")
        first = answers[0] if answers else (None, None)
        out.append(QAQuestion(str(row["id"]), row["question"], context, tuple(t for t, _ in answers), first[1],
                              first[0], n))
    return out
