"""The three biomed kinds as Hugging Face datasets (parquet, arrow, a save_to_disk folder or
`hf:NAME[:CONFIG]@SPLIT`; eval/readers/hf_source.py), read into the records data.py gives for the files:

    ner   the BLURB layout (`bigbio/blurb` bc5chem, bc5disease, ncbi_disease; `ncbi_disease`): a row per
          sentence, tokens [str] and ner_tags [str] (B, I, O or B-Type, I-Type, as the TSV's second
          column) or [int] with the ClassLabel names the dataset declares (its features)
    re    the ChemProt TSV's columns: index (or id), sentence (entities masked @CHEMICAL$ @GENE$), label
          (CPR:3 ... false; a string, or an int with ClassLabel names)
    qa    the `squad` schema: rows {id, title, context, question, answers: {text: [...], answer_start:
          [...]}}, read into the QAQuestions that data.read_squad_json gives for the JSON. Every answer is
          a gold synonym; the first one is located, and its answer_start must point at its text.

The labels and masks are checked by data.py's own rules; a problem is `FILE: row N: problem`.
"""

from __future__ import annotations

import os

from megazoo.eval.readers.hf_source import NumberedRows, RowError, answer_pairs, is_hf_source, iter_rows, label_names
from megazoo.tasks.biomed.data import BiomedFormatError, NerSentence, QAQuestion, Relation, check_tag, relation

COLUMNS = ("id", "context", "question", "answers")
SCHEMA = "the Hugging Face `squad` schema: id, title, context, question, answers {text, answer_start}"
NER = "the BLURB NER columns: tokens [str], ner_tags [str, or int with ClassLabel names]"
CHEMPROT = "the BLUE ChemProt TSV columns: index (or id), sentence, label"

__all__ = ["is_hf_source", "read_chemprot_hf", "read_ner_hf", "read_squad_hf"]


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


def _label(value, names: list[str] | None, rows: NumberedRows, n: int, column: str) -> str:
    """A label cell as its name: a string, or a ClassLabel number looked up in the declared names."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        if names is None:
            raise BiomedFormatError(rows.text, n, f"{column} holds numbers but the dataset declares no label "
                                                  f"names (a ClassLabel feature); give the labels as strings")
        if not 0 <= value < len(names):
            raise BiomedFormatError(rows.text, n, f"{column} {value} is outside the {len(names)} declared labels")
        return names[value]
    raise BiomedFormatError(rows.text, n, f"{column} must be a string or a ClassLabel number, got "
                                          f"{type(value).__name__} {value!r:.40}")


def read_ner_hf(path: str | os.PathLike, split: str | None = None) -> list[NerSentence]:
    """The sentences of one split of a tokens/ner_tags dataset, in row order (line: the row number); a
    row without tokens is skipped, as a blank line of the TSV."""
    rows = NumberedRows(path, ("tokens", "ner_tags"), NER, split=split, error=BiomedRowError)
    names = None
    out = []
    with rows.native_errors(BiomedFormatError):
        for n, row in rows:
            tokens, tags = row["tokens"], row["ner_tags"]
            if not isinstance(tokens, list) or not isinstance(tags, list):
                raise BiomedFormatError(rows.text, n, "tokens and ner_tags must be lists")
            if len(tokens) != len(tags):
                raise BiomedFormatError(rows.text, n, f"{len(tokens)} tokens but {len(tags)} ner_tags; give one tag "
                                                      f"per token")
            if names is None and any(isinstance(t, int) for t in tags):
                names = label_names(path, "ner_tags", split)
            labels = [_label(t, names, rows, n, "ner_tags") for t in tags]
            for token, label in zip(tokens, labels):
                if not isinstance(token, str) or not token.strip():
                    raise BiomedFormatError(rows.text, n, f"an empty or non-string token {token!r:.40}")
                check_tag(label, rows.text, n)
            if tokens:
                out.append(NerSentence(tuple(t.strip() for t in tokens), tuple(labels), n))
    return out


def read_chemprot_hf(path: str | os.PathLike, split: str | None = None) -> list[Relation]:
    """The examples of one split of a ChemProt dataset, in row order (id: the index column, else the row
    number; line: the row number)."""
    rows = NumberedRows(path, ("sentence", "label"), CHEMPROT, optional=("index", "id"), split=split,
                        error=BiomedRowError)
    names = None
    out = []
    with rows.native_errors(BiomedFormatError):
        for n, row in rows:
            if names is None and isinstance(row["label"], int):
                names = label_names(path, "label", split)
            if not isinstance(row["sentence"], str):
                raise BiomedFormatError(rows.text, n, f"sentence must be a string, got {row['sentence']!r:.40}")
            uid = row.get("index", row.get("id"))
            out.append(relation(str(n if uid is None else uid).strip(), row["sentence"].strip(),
                                _label(row["label"], names, rows, n, "label"), rows.text, n))
    return out
