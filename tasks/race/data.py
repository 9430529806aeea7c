"""RACE questions and the readers for its two public layouts.

The original release: `RACE/{train,dev,test}/{middle,high}/<n>.txt`, each file one JSON object on
one line with `article`, `questions` (list), `options` (a list of 4-option lists), `answers`
(letters A-D) and `id`. The Hugging Face `race` dataset: rows with `example_id`, `article`,
`question`, `options`, `answer`, as parquet, arrow or JSON files, a save_to_disk folder or `hf:race:all`
(read through eval/readers/hf_source.py).

Both readers return the same flat list of `RaceQuestion`s, one per question, in a fixed order.
The original layout is parsed by the shared reader `megazoo.eval.readers.race`; the HF one here.
Every malformed input raises a `ReaderError` (`RaceFormatError` for the HF layout) whose message
names the file and the line (or row) and says what is wrong.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from megazoo.eval.readers.common import MissingFile, ReaderError
from megazoo.eval.readers.hf_source import RowError, is_hf_source, iter_rows

NUM_CHOICES = 4
LETTERS = "ABCD"
LEVELS = ("middle", "high")
SPLITS = ("train", "dev", "test")


class RaceFormatError(ReaderError):
    """A RACE file that cannot be read as RACE; the message names the file and the line or row."""

    def __init__(self, path: str | os.PathLike, line: int, problem: str, unit: str = "line"):
        super().__init__(path, line, problem)
        if unit != "line":  # parquet has rows, not lines
            self.args = (f"{self.path}, {unit} {line}: {problem}",)

    def __str__(self) -> str:
        return self.args[0]


@dataclass(frozen=True)
class RaceQuestion:
    uid: str  # unique within a data set: "<level>/<document id>#<question index>"
    article: str
    question: str
    options: tuple[str, ...]  # exactly 4
    label: int  # 0..3 (A..D)
    level: str  # "middle", "high", or "" when the layout does not say
    doc_id: str


def _label(letter, path, line, unit="line") -> int:
    if not isinstance(letter, str) or len(letter.strip()) != 1 or letter.strip().upper() not in LETTERS:
        raise RaceFormatError(path, line, f"answer {letter!r} is not one of the letters A, B, C, D", unit)
    return LETTERS.index(letter.strip().upper())


def _options(options, path, line, what: str, unit="line") -> tuple[str, ...]:
    if not isinstance(options, (list, tuple)) or not all(isinstance(o, str) for o in options):
        raise RaceFormatError(path, line, f"{what} must be a list of {NUM_CHOICES} strings, got {options!r:.80}", unit)
    if len(options) != NUM_CHOICES:
        raise RaceFormatError(path, line, f"{what} has {len(options)} options; RACE questions need exactly "
                                          f"{NUM_CHOICES} (A-D)", unit)
    return tuple(options)


# ---- the original release (parsed by the shared reader in megazoo.eval.readers.race) ---------

def _from_examples(examples) -> list[RaceQuestion]:
    seen: dict[tuple[str, str], int] = {}
    out = []
    for ex in examples:
        index = seen.get((ex.level, ex.id), 0)
        seen[(ex.level, ex.id)] = index + 1
        out.append(RaceQuestion(uid=f"{ex.level}/{ex.id}#{index}" if ex.level else f"{ex.id}#{index}",
                                article=ex.article, question=ex.question, options=tuple(ex.options),
                                label=ex.label, level=ex.level, doc_id=ex.id))
    return out


def read_race_dir(root: str | os.PathLike, split: str | None = None) -> list[RaceQuestion]:
    """Questions under an original-layout folder: `RACE/` (with `split`), `RACE/<split>/`,
    `RACE/<split>/<level>/`, or one file. Malformed files raise the shared reader's ReaderError."""
    from megazoo.eval.readers.race import iter_race

    root = Path(root)
    if not root.exists():
        raise MissingFile(f"{root}: no such RACE folder (expected RACE/{{train,dev,test}}/{{middle,high}}/*.txt)")
    if split is None:
        if any((root / s).is_dir() for s in SPLITS):
            raise ValueError(f"{root} holds the splits {[s for s in SPLITS if (root / s).is_dir()]}; name one "
                             f"(split='dev', --split dev) or pass the split's folder")
        folder = root
    elif (root / split).is_dir():
        folder = root / split
    elif root.name == split:
        folder = root
    else:
        have = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
        raise MissingFile(f"{root / split}: no such split folder (have {have}); pass the RACE root, or "
                                f"one split's folder with no split (--split none)")
    return _from_examples(iter_race(folder))  # streamed: one small file at a time


# ---- the Hugging Face schema -----------------------------------------------------------------

HF_COLUMNS = ("example_id", "article", "question", "options", "answer")
HF_SCHEMA = f"the Hugging Face `race` schema: {', '.join(HF_COLUMNS)}"
HF_SUFFIXES = (".parquet", ".arrow", ".json", ".jsonl")


class RaceRowError(RowError, RaceFormatError):
    """A bad row of the Hugging Face layout: `FILE: row N: problem` (`line N` in JSON-lines)."""


def _hf_level(example_id: str, label: str) -> str:
    for level in LEVELS:
        if example_id.startswith(level):
            return level
    words = set(re.split(r"[/\\:@]", label))  # a folder or an hf:race:CONFIG naming the level
    return next((lv for lv in LEVELS if lv in words), "")


def read_hf_race(path: str | os.PathLike, split: str | None = None) -> list[RaceQuestion]:
    """Questions from the Hugging Face `race` dataset: parquet, arrow or JSON(-lines) files, a
    save_to_disk folder, a Hub snapshot folder (`all/test-00000-of-00001.parquet`; `split` picks the
    files, dev -> validation; `all` is read alone when the middle/ and high/ configs are there too)
    or `hf:race:all` (eval/readers/hf_source.py)."""
    out: list[RaceQuestion] = []
    seen: dict[str, int] = {}
    rows = iter_rows(path, HF_COLUMNS, HF_SCHEMA, split=split, error=RaceRowError, json_ok=True, prefer_config="all")
    for label, number, row, unit in rows:
        for name in HF_COLUMNS:
            if row[name] is None:  # JSON rows without the key come back as None
                raise RaceRowError(label, number, f"missing field {name!r}", unit)
        for name in ("example_id", "article", "question", "answer"):
            if not isinstance(row[name], str):
                raise RaceRowError(label, number, f"field {name!r} must be a string, got {row[name]!r:.60}", unit)
        try:
            options = _options(row["options"], label, number, "options", unit)
            answer = _label(row["answer"], label, number, unit)
        except RaceFormatError as exc:
            raise RaceRowError(label, number, exc.problem, unit) from None
        doc = row["example_id"]
        index = seen.get(doc, 0)
        seen[doc] = index + 1
        level = _hf_level(doc, label)
        out.append(RaceQuestion(uid=f"{level}/{doc}#{index}" if level else f"{doc}#{index}", article=row["article"],
                                question=row["question"], options=options, label=answer, level=level, doc_id=doc))
    return out


# ---- either ----------------------------------------------------------------------------------

def is_hf_layout(path: str | os.PathLike) -> bool:
    """An HF source (eval/readers/hf_source.is_hf_source), a RACE JSON(-lines) file, or a folder of
    JSON files with no original-layout *.txt."""
    if is_hf_source(path):
        return not Path(path).is_dir() or not any(Path(path).rglob("*.txt"))
    path = Path(path)
    if path.is_file():
        return path.suffix in HF_SUFFIXES
    return path.is_dir() and not any(path.rglob("*.txt")) and any(p.suffix in HF_SUFFIXES for p in path.rglob("*"))


def load_race(path: str | os.PathLike, split: str | None = None) -> list[RaceQuestion]:
    """Questions from either layout, told apart by the files: *.txt is the original release; parquet,
    arrow, JSON(-lines), save_to_disk folders and `hf:race:CONFIG` the Hugging Face schema."""
    return read_hf_race(path, split) if is_hf_layout(path) else read_race_dir(path, split)


def write_race_dir(root: str | os.PathLike, split: str, level: str, records: list[dict]) -> None:
    """Write records in the original layout: `root/split/level/<n>.txt`, one JSON object each."""
    folder = Path(root) / split / level
    folder.mkdir(parents=True, exist_ok=True)
    for n, record in enumerate(records, start=1):
        record = dict(record)
        record.setdefault("id", f"{level}{n}.txt")
        (folder / f"{n}.txt").write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
