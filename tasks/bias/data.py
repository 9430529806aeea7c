"""SBIC v2 readers: per-annotation CSVs, the aggregated CSVs, binarisation and per-post labels.

The Social Bias Inference Corpus ships `SBIC.v2.{trn,dev,tst}.csv` with one row per annotation
(an annotator's answers about one post; an annotator who names several targeted groups gives
several rows) and `SBIC.v2.agg.{trn,dev,tst}.csv` with one row per post whose YN columns are
already the means over annotators. Both become the same list of `Post`s for one category:

    posts = load_posts("SBIC.v2.tst.csv", "offensive")       # or an SBIC.v2.agg.*.csv
    posts[0].text, posts[0].label, posts[0].mean              # "...", 1, 0.833

Aggregation (the paper's recipe): each annotator's value for the category (1.0, 0.5 or 0.0; their
rows agree on it, the largest is taken), the mean over the post's annotators, then the label is
mean >= 0.5. An empty cell is an unanswered question (SBIC leaves the target questions empty when
the post is not offensive) and does not count; a post nobody answered for the category has mean 0.
The group task per target category (`group:race`, ...) counts an annotator as 1 when one of their
rows names that `targetCategory`. Every malformed input raises `SbicFormatError`: `file:line: problem`
(in a Hugging Face dataset of the same columns, data_hf.py: `FILE: row N: problem`).
The CSVs are streamed a row at a time (a gzip read directly); the posts, the readers' output, are kept.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from megazoo.core.fs import write_bytes_atomic
from megazoo.eval.readers.common import LineError, MissingFile

CATEGORIES = {  # the task name -> the SBIC column it reads
    "offensive": "offensiveYN",
    "intent": "intentYN",
    "lewd": "sexYN",
    "group": "whoTarget",
    "ingroup": "speakerMinorityYN",
}
TARGET_CATEGORIES = ("gender", "race", "culture", "disabled", "social", "victim", "body")
COLUMNS = ("whoTarget", "intentYN", "sexYN", "sexReason", "offensiveYN", "annotatorGender", "annotatorMinority",
           "sexPhrase", "speakerMinorityYN", "WorkerId", "HITId", "annotatorPolitics", "annotatorRace",
           "annotatorAge", "post", "targetMinority", "targetCategory", "targetStereotype", "dataSource")
THRESHOLD = 0.5


class SbicFormatError(LineError):
    """An SBIC file that cannot be read; the message is `file:line: problem`."""


@dataclass(frozen=True)
class Post:
    text: str
    label: int  # 1 when mean >= 0.5
    mean: float  # the mean over the annotators who answered (the aggregated CSV's value)
    annotators: int = 0  # 0 for an aggregated CSV (it does not say)
    target_categories: tuple[str, ...] = field(default=())
    source: str = ""


def post_id(text: str) -> str:
    """A post's id in predictions files: SBIC has no post id column, so the first 16 hex digits of
    the SHA-1 of its text (the same post gets the same id in every CSV layout and every method)."""
    import hashlib

    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def category_names() -> list[str]:
    return list(CATEGORIES) + [f"group:{c}" for c in TARGET_CATEGORIES]


def check_category(category: str) -> str:
    if category in CATEGORIES:
        return category
    if category.startswith("group:") and category[len("group:"):] in TARGET_CATEGORIES:
        return category
    raise ValueError(f"unknown category {category!r}; choose one of {', '.join(category_names())}")


def binarise(mean: float) -> int:
    return int(mean >= THRESHOLD)


def utf8_lines(path, error=None):
    """Each line of a UTF-8 file (or its gzip, known by its first bytes) with its line end, decoded one
    line at a time (eval/readers/common.py text_lines; the csv module reads the physical lines in order,
    so its line_num stays right); an undecodable line raises `error` (default SbicFormatError)
    `file:line: not valid UTF-8 ...`. Close it (contextlib.closing) when leaving early."""
    from megazoo.eval.readers.common import text_lines

    lines = text_lines(path, "an SBIC v2 CSV", error or SbicFormatError)
    with closing(lines):
        for _, line in lines:
            yield line


def _rows(path) -> tuple[list[str], Iterator[tuple[int, dict]]]:
    """(header, (line number, row) for each row, streamed) of a CSV; a missing `post` column fails on
    line 1 at once, a bad row when the stream reaches it."""
    path = Path(path)
    if not path.is_file():
        raise MissingFile(f"{path}: no such file (expected an SBIC v2 CSV)")
    rows = _stream_rows(path)
    return next(rows), rows


def _stream_rows(path):
    """The header, then (line number, row) for each row (see _rows)."""
    lines = utf8_lines(path)
    with closing(lines):
        reader = csv.DictReader(lines)
        try:
            header = reader.fieldnames or []
            if "post" not in header:
                raise SbicFormatError(path, 1, f"no `post` column (columns: {', '.join(header) or 'none'}); "
                                               f"expected an SBIC v2 CSV")
            yield header
            count, start = 0, reader.line_num + 1
            for row in reader:
                if None in row:  # more cells than header names
                    raise SbicFormatError(path, start, f"{len(header) + len(row[None])} cells, the header has "
                                                       f"{len(header)}")
                count += 1
                yield start, row
                start = reader.line_num + 1
        except csv.Error as err:  # a NUL byte, a field over the csv module's size limit, a stray quote
            raise SbicFormatError(path, reader.line_num or 1, f"not a readable CSV ({err})") from None
    if not count:
        raise SbicFormatError(path, 1, "no rows below the header")


def _number(value, column: str, path, line: int) -> float | None:
    """A YN cell as a float in [0, 1]; None when empty."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        x = float(text)
    except ValueError:
        raise SbicFormatError(path, line, f"{column} is {text!r}, not a number (1.0, 0.5 or 0.0)") from None
    if not 0.0 <= x <= 1.0:
        raise SbicFormatError(path, line, f"{column} is {text}, outside [0, 1]")
    return x


def _post_text(row: dict, path, line: int) -> str:
    text = (row.get("post") or "").strip()
    if not text:
        raise SbicFormatError(path, line, "the post is empty")
    return text


def _category_value(row: dict, category: str, path, line: int) -> float | None:
    if category.startswith("group:"):
        named = (row.get("targetCategory") or "").strip().lower()
        return 1.0 if named == category[len("group:"):] else 0.0
    return _number(row.get(CATEGORIES[category]), CATEGORIES[category], path, line)


def is_aggregated(header) -> bool:
    """The aggregated CSV has no annotator columns."""
    return "WorkerId" not in header and "HITId" not in header


def read_annotations(path, category: str = "offensive") -> list[Post]:
    """Per-post labels from a per-annotation `SBIC.v2.{trn,dev,tst}.csv` (see the module docstring), or
    the same columns as a Hugging Face dataset (data_hf.py)."""
    from megazoo.tasks.bias import data_hf  # social_bias_frames as parquet/arrow/save_to_disk/hf:
    if data_hf.is_hf_source(path):
        return data_hf.read_posts_hf(path, category, aggregated=False)
    header, rows = _rows(path)
    return annotation_posts(path, header, rows, category)


def annotation_posts(path, header: list[str], rows, category: str) -> list[Post]:
    """The posts of (line, row) pairs of the per-annotation layout; `path` names the rows' source."""
    category = check_category(category)
    column = "targetCategory" if category.startswith("group:") else CATEGORIES[category]
    if column not in header:
        raise SbicFormatError(path, 1, f"no `{column}` column for the {category} category")
    posts: dict[str, dict] = {}  # post -> {annotator: value}, in order of first appearance
    for line, row in rows:
        text = _post_text(row, path, line)
        value = _category_value(row, category, path, line)
        for other in CATEGORIES.values():  # every YN cell must be a number, whatever the category
            if other in row and other != column:
                _number(row[other], other, path, line)
        entry = posts.setdefault(text, {"votes": {}, "targets": [], "source": row.get("dataSource") or ""})
        annotator = (row.get("WorkerId") or "", row.get("HITId") or "")
        target = (row.get("targetCategory") or "").strip().lower()
        if target and target not in entry["targets"]:
            entry["targets"].append(target)
        if value is not None:
            previous = entry["votes"].get(annotator)
            entry["votes"][annotator] = value if previous is None else max(previous, value)
        else:
            entry["votes"].setdefault(annotator, None)
    out = []
    for text, entry in posts.items():
        answered = [v for v in entry["votes"].values() if v is not None]
        mean = sum(answered) / len(answered) if answered else 0.0
        out.append(Post(text, binarise(mean), mean, len(entry["votes"]), tuple(entry["targets"]), entry["source"]))
    return out


def read_aggregated(path, category: str = "offensive") -> list[Post]:
    """Per-post labels from an aggregated `SBIC.v2.agg.*.csv` (YN columns are annotator means), or the
    same columns as a Hugging Face dataset (data_hf.py)."""
    from megazoo.tasks.bias import data_hf  # the aggregated columns as parquet/arrow/save_to_disk/hf:
    if data_hf.is_hf_source(path):
        return data_hf.read_posts_hf(path, category, aggregated=True)
    header, rows = _rows(path)
    return aggregated_posts(path, header, rows, category)


def aggregated_posts(path, header: list[str], rows, category: str) -> list[Post]:
    """The posts of (line, row) pairs of the aggregated layout; `path` names the rows' source."""
    category = check_category(category)
    if category.startswith("group:"):
        raise ValueError(f"{path}: the aggregated CSV lists target categories without per-annotator votes; "
                         f"use the per-annotation SBIC.v2.*.csv for {category}")
    column = CATEGORIES[category]
    if column not in header:
        raise SbicFormatError(path, 1, f"no `{column}` column for the {category} category")
    out = []
    for line, row in rows:
        text = _post_text(row, path, line)
        mean = _number(row.get(column), column, path, line) or 0.0
        out.append(Post(text, binarise(mean), mean, 0, (), row.get("dataSource") or ""))
    return out


def load_posts(path, category: str = "offensive") -> list[Post]:
    """The posts of either SBIC CSV layout (told apart by the annotator columns), or of a Hugging Face
    dataset with either layout's columns (`social_bias_frames`: data_hf.py)."""
    from megazoo.tasks.bias import data_hf
    if data_hf.is_hf_source(path):
        return data_hf.read_posts_hf(path, category)
    path = Path(path)
    if not path.is_file():
        raise MissingFile(f"{path}: no such file (expected an SBIC v2 CSV)")
    lines = utf8_lines(path)
    with closing(lines):
        try:
            header = next(csv.reader(lines), [])
        except csv.Error as err:
            raise SbicFormatError(path, 1, f"not a readable CSV ({err})") from None
    reader = read_aggregated if is_aggregated(header) else read_annotations
    return reader(path, category)


def write_annotations(path, rows: list[dict]) -> Path:
    """Write per-annotation rows (dicts keyed by COLUMNS; missing keys are empty) as an SBIC CSV."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=COLUMNS, quoting=csv.QUOTE_ALL)
    writer.writeheader()
    for row in rows:
        writer.writerow({c: row.get(c, "") for c in COLUMNS})
    write_bytes_atomic(path, text.getvalue().encode("utf-8"))  # the csv module's own line ends, untranslated
    return path
