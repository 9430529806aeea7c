"""ROCStories and the knowledge base as Hugging Face datasets (parquet, arrow, a save_to_disk folder or
`hf:NAME@SPLIT`; eval/readers/hf_source.py), read by the native readers' own checks:

    stories     the CSV's columns: storyid, storytitle, sentence1..sentence5 (raw ROCStories), or the
                Story Cloze columns InputStoryid, InputSentence1..4, RandomFifthSentenceQuiz1/2,
                AnswerRightEnding, or the Hub's `story_cloze` names for them (story_id,
                input_sentence_1..4, sentence_quiz1/2, answer_right_ending); names matched ignoring case
    knowledge   the Hub's `conceptnet5` rows (full_rel, rel, arg1, arg2, extra_info: the five fields of
                the ConceptNet CSV; non-English assertions skipped), or triples {head, relation, tail}
                (the TSV's three fields)

A cell may be a string, a number (answer_right_ending) or null (an empty cell). A problem is
`FILE: row N: problem` (a missing column names the schema).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from megazoo.core.data.errors import DataError
from megazoo.eval.readers.hf_source import NumberedRows, RowError, column_names, is_hf_source
from megazoo.tasks.story.data import CLOZE, HEADER, Story, StoryDataError, _stories
from megazoo.tasks.story.knowledge import KnowledgeError, Triple, conceptnet_triples, tsv_triples

STORY_CLOZE = ["story_id", "input_sentence_1", "input_sentence_2", "input_sentence_3", "input_sentence_4",
               "sentence_quiz1", "sentence_quiz2", "answer_right_ending"]  # the Hub's names of CLOZE's columns
STORIES = (f"the ROCStories CSV columns {', '.join(HEADER)} (or the Story Cloze columns {', '.join(CLOZE)}, "
           f"or the Hub's `story_cloze` schema {', '.join(STORY_CLOZE)})")
CONCEPTNET = ("the Hugging Face `conceptnet5` schema: full_rel, rel, arg1, arg2, extra_info (or triples: head, "
              "relation, tail)")
CONCEPTNET_FIELDS = ("full_rel", "rel", "arg1", "arg2", "extra_info")
TRIPLE = ("head", "relation", "tail")

__all__ = ["is_hf_source", "read_knowledge_hf", "read_rocstories_hf"]


class StoryRowError(RowError, DataError):
    """A bad row of a stories or knowledge dataset: `FILE: row N: problem` (a DataError, as
    StoryDataError and KnowledgeError)."""


def _text(value, key: str, rows: NumberedRows, n: int, error) -> str:
    """A cell as the CSV's text: a string, a number's digits, "" for null."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise error(rows.text, n, f"{key} must be text, got {type(value).__name__} {value!r:.40}")


class _Table:
    """A csv.reader's face on the rows of a dataset: the header, then each row's cells; `line_num` is
    the row number (data._stories names it in its errors)."""

    def __init__(self, rows: NumberedRows, columns: list[str], header: list[str]):
        self.rows, self.columns, self.header, self.line_num = rows, columns, header, 0
        self._lists = self._cells()

    def _cells(self) -> Iterator[list[str]]:
        yield self.header
        for n, row in self.rows:
            self.line_num = n
            yield [_text(row[c], c, self.rows, n, StoryDataError) for c in self.columns]

    def __iter__(self):
        return self

    def __next__(self) -> list[str]:
        return next(self._lists)


def _story_columns(path, split) -> tuple[list[str], list[str]]:
    """(the dataset's columns to read, the CSV header they stand for)."""
    have = {c.lower(): c for c in column_names(path, split, StoryRowError)}
    for names, header in ((HEADER[2:], None), (CLOZE, CLOZE), (STORY_CLOZE, CLOZE)):
        if all(c.lower() in have for c in names):
            if header is None:  # raw: storyid and storytitle where present
                columns = [have[c] for c in HEADER if c in have]
                return columns, [c.lower() for c in columns]
            return [have[c.lower()] for c in names], list(header)
    raise StoryRowError(str(path), None, f"has no ROCStories columns (expected {STORIES}; it has "
                                         f"{', '.join(have.values())})")


def read_rocstories_hf(path: str | os.PathLike, split: str | None = None) -> list[Story]:
    """Every story of one split, in row order, as data.read_rocstories reads the CSV."""
    columns, header = _story_columns(path, split)
    rows = NumberedRows(path, columns, STORIES, split=split, error=StoryRowError)
    with rows.native_errors(StoryDataError):
        return _stories(rows.text, _Table(rows, columns, header))


def read_knowledge_hf(path: str | os.PathLike, split: str | None = None) -> list[Triple]:
    """The triples of one split: ConceptNet rows (English only, checked as the CSV's lines) or
    head/relation/tail triples (checked as the TSV's lines)."""
    conceptnet = "arg1" in column_names(path, split, StoryRowError)
    columns = CONCEPTNET_FIELDS if conceptnet else TRIPLE
    rows = NumberedRows(path, columns, CONCEPTNET, split=split, error=StoryRowError)
    with rows.native_errors(KnowledgeError):
        fields = ((n, [_text(row[c], c, rows, n, KnowledgeError) for c in columns]) for n, row in rows)
        if conceptnet:
            return list(conceptnet_triples(rows.text, fields))
        return tsv_triples(rows.text, fields)
