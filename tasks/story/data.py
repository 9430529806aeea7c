"""ROCStories readers and writers, and the seeded 90/5/5 split.

Formats read (a header row is required; the columns are found by name):
    raw CSV             storyid,storytitle,sentence1,sentence2,sentence3,sentence4,sentence5
    2016/2017 releases  the same columns as "ROCStories winter 2017" / "spring 2016" ship them
                        (InputStoryid, InputSentence1..4, RandomFifthSentenceQuiz1/2 and
                        AnswerRightEnding for the Story Cloze val/test files: the right ending
                        becomes sentence 5)
A row with fewer than five non-empty sentences is an error `file:line: problem`. Files are streamed
a line at a time and may be gzipped (known by their first bytes). The same columns as a Hugging Face
dataset are read by data_hf.py (`FILE: row N: problem`).
"""

from __future__ import annotations

import csv
import io
import os
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import torch

from megazoo.core.data.errors import DataError
from megazoo.core.fs import write_bytes_atomic

HEADER = ["storyid", "storytitle", "sentence1", "sentence2", "sentence3", "sentence4", "sentence5"]
CLOZE = ["InputStoryid", "InputSentence1", "InputSentence2", "InputSentence3", "InputSentence4",
         "RandomFifthSentenceQuiz1", "RandomFifthSentenceQuiz2", "AnswerRightEnding"]


class StoryDataError(DataError):
    """A story file in a wrong shape: `file:line: problem`."""

    def __init__(self, path, line: int, problem: str):
        super().__init__(f"{os.fspath(path)}:{line}: {problem}")
        self.path, self.line, self.problem = os.fspath(path), line, problem


@dataclass
class Story:
    id: str
    title: str
    sentences: list[str]
    names: list[tuple[str, str]] = field(default_factory=list)  # (placeholder, name) in order: delex.py


def utf8_lines(path, error=None):
    """Each line of a UTF-8 file (or its gzip, known by its first bytes) with its line end, decoded one
    line at a time (streaming, eval/readers/common.py text_lines; the csv module reads the physical
    lines in order, so its line_num stays right). An undecodable line raises `error` (default
    StoryDataError) `file:line: not valid UTF-8 ...`. Close it (contextlib.closing) when leaving early."""
    from megazoo.eval.readers.common import text_lines

    lines = text_lines(path, "a UTF-8 text file", error or StoryDataError)
    with closing(lines):
        for _, line in lines:
            yield line


def read_utf8(path, error=None) -> str:
    """The whole file as text (see utf8_lines)."""
    from megazoo.core.fs import read_utf8 as read

    return read(path, error or StoryDataError)


def read_records(path, valid, expected: str, empty: str) -> list[tuple[int, dict]]:
    """(line number, object) of each non-blank line of a JSON-lines file (or its gzip); a line that is no JSON or
    for which valid(obj) is false (or raises KeyError, TypeError, ValueError) is an error
    `file:line: {expected}`, a file without records `file:1: {empty}`."""
    import json

    rows = []
    for number, line in enumerate(utf8_lines(path), start=1):  # streamed; the rows are kept
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            ok = valid(row)
        except (KeyError, TypeError, ValueError):  # json.JSONDecodeError is a ValueError
            ok = False
        if not ok:
            raise StoryDataError(path, number, expected)
        rows.append((number, row))
    if not rows:
        raise StoryDataError(path, 1, empty)
    return rows


def _columns(header: list[str], path) -> tuple[str, list[str]] | None:
    """(id column, the five sentence columns or the cloze columns) of a header, or None."""
    lower = {h.strip().lower(): h for h in header}
    if all(h in lower for h in HEADER[2:]):
        return lower.get("storyid", header[0]), [lower[h] for h in HEADER[2:]]
    if all(h.lower() in lower for h in CLOZE):
        return lower["inputstoryid"], [lower[h.lower()] for h in CLOZE[1:]]
    return None


def read_rocstories(path) -> list[Story]:
    """Every story of a ROCStories CSV (raw, 2016/2017 or Story Cloze layout), or of the same columns as a
    Hugging Face dataset (data_hf.py; the Hub's `story_cloze` columns too)."""
    from megazoo.tasks.story import data_hf  # parquet/arrow/save_to_disk/hf: (eval/readers/hf_source.py)
    if data_hf.is_hf_source(path):
        return data_hf.read_rocstories_hf(path)
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file (expected a ROCStories CSV: {','.join(HEADER)})")
    lines = utf8_lines(path)
    rows = csv.reader(lines)
    try:
        stories = _stories(path, rows)
    except csv.Error as err:  # a NUL byte, a field over the csv module's size limit
        raise StoryDataError(path, rows.line_num or 1, f"not a readable CSV ({err})") from None
    finally:
        lines.close()
    if not stories:
        raise StoryDataError(path, 2, "no stories after the header")
    return stories


def _stories(path, rows) -> list[Story]:
    """The stories of a csv.reader over a ROCStories file (`file:line: problem` for a bad row)."""
    header = next(rows, None)
    if header is None:
        raise StoryDataError(path, 1, f"the file is empty; expected the header {','.join(HEADER)}")
    cols = _columns(header, path)
    if cols is None:
        raise StoryDataError(path, 1, f"unknown header {','.join(header)!r}; expected {','.join(HEADER)} "
                                      f"(or the 2016/2017 Story Cloze columns)")
    id_col, sent_cols = cols
    stories, seen = [], set()
    for row in rows:
        line = rows.line_num
        if not any(c.strip() for c in row):
            continue
        rec = dict(zip(header, row))
        if len(sent_cols) == 7:  # Story Cloze: four sentences, two endings, the right one's number
            right = rec.get(sent_cols[6], "").strip()
            if right not in ("1", "2"):
                raise StoryDataError(path, line, f"AnswerRightEnding must be 1 or 2, got {right!r}")
            texts = [rec.get(c, "") for c in sent_cols[:4]] + [rec.get(sent_cols[3 + int(right)], "")]
        else:
            texts = [rec.get(c, "") for c in sent_cols]
        texts = [t.strip() for t in texts]
        n = sum(bool(t) for t in texts)
        if n < 5 or len(row) < len(header):
            raise StoryDataError(path, line, f"a story needs five sentences, this row has {n}")
        sid = rec.get(id_col, "").strip() or f"line{line}"
        if sid in seen:
            raise StoryDataError(path, line, f"story id {sid!r} appears twice")
        seen.add(sid)
        stories.append(Story(sid, rec.get("storytitle", "").strip(), texts))
    return stories


def write_rocstories(path, stories: list[Story]) -> Path:
    """The raw ROCStories CSV of `stories` (written atomically)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO(newline="")
    w = csv.writer(text)
    w.writerow(HEADER)
    for s in stories:
        w.writerow([s.id, s.title, *s.sentences])
    write_bytes_atomic(path, text.getvalue().encode("utf-8"))  # the csv module's own line ends, untranslated
    return path


def split_stories(stories: list[Story], seed: int = 0, fractions=(0.9, 0.05, 0.05)) -> dict[str, list[Story]]:
    """Seeded train/valid/test split (Guan et al.'s 90/5/5); every split gets at least one story
    when there are three or more."""
    n = len(stories)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    n_valid = max(1, round(fractions[1] * n)) if n >= 3 else 0
    n_test = max(1, round(fractions[2] * n)) if n >= 3 else 0
    n_train = n - n_valid - n_test
    parts = {"train": order[:n_train], "valid": order[n_train:n_train + n_valid], "test": order[n_train + n_valid:]}
    return {k: [stories[i] for i in sorted(v)] for k, v in parts.items()}
