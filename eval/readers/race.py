"""RACE (Lai et al. 2017) in its original layout: ``RACE/{train,dev,test}/{middle,high}/<n>.txt``.

Each ``.txt`` file holds one JSON object (on one line) with ``article``, ``questions`` (list),
``options`` (one list of four strings per question), ``answers`` (one letter A-D per question)
and ``id``; Megatron-LM ``tasks/race/data.py`` globs ``*.txt`` and reads every line this way.
One example is made per question, labelled ``ord(answer) - ord("A")``; ``level`` is the
``middle``/``high`` folder name (RACE-h is the ``high`` folder of the test split).
"""
from __future__ import annotations

import errno
import glob
import os
from collections.abc import Iterator
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, field, read_jsonl, string_list


@dataclass
class RaceExample:
    id: str
    level: str
    article: str
    question: str
    options: list[str]
    label: int


def _race_files(path: str | os.PathLike) -> list[str]:
    path = os.fspath(path)
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise FileNotFoundError(errno.ENOENT, f"{path}: no such RACE file or folder")
    files = sorted(glob.glob(os.path.join(path, "**", "*.txt"), recursive=True))
    if not files:
        raise FileNotFoundError(errno.ENOENT, f"{path}: no RACE .txt files in this folder or below it")
    return files


def iter_race(path: str | os.PathLike) -> Iterator[RaceExample]:
    """The questions of one RACE file, or of every ``*.txt`` below a folder (sorted by path), one
    file at a time, each read a line at a time (read_jsonl; a gzip too): no split is held as one
    string, and memory is bounded by one file's questions (plus the sorted list of file names)."""
    what = "RACE: one JSON object with article, questions, options, answers and id"
    for file in _race_files(path):
        level = os.path.basename(os.path.dirname(file))
        level = level if level in ("middle", "high") else ""
        for line, obj in read_jsonl(file, what):
            article = field(obj, "article", str, file, line)
            questions = string_list(obj, "questions", file, line)
            options = field(obj, "options", list, file, line)
            answers = string_list(obj, "answers", file, line)
            doc_id = field(obj, "id", str, file, line)
            if not (len(questions) == len(options) == len(answers)):
                raise ReaderError(
                    file, line,
                    f"{len(questions)} questions, {len(options)} option lists and {len(answers)} answers;"
                    " they must match",
                )
            for n, (question, choices, answer) in enumerate(zip(questions, options, answers)):
                four_strings = isinstance(choices, list) and len(choices) == 4
                if not (four_strings and all(isinstance(c, str) for c in choices)):
                    raise ReaderError(file, line, f"options[{n}] must be a list of 4 strings")
                if answer not in ("A", "B", "C", "D"):
                    raise ReaderError(file, line, f"answers[{n}] must be a letter A-D, got {answer!r:.20}")
                yield RaceExample(
                    id=doc_id, level=level, article=article, question=question,
                    options=list(choices), label=ord(answer) - ord("A"),
                )


def read_race(path: str | os.PathLike) -> list[RaceExample]:
    """All questions of one RACE file or of a folder (iter_race)."""
    return list(iter_race(path))
