"""SBIC as a Hugging Face dataset (parquet, arrow, a save_to_disk folder or `hf:NAME@SPLIT`;
eval/readers/hf_source.py): the columns of the CSVs, one row per CSV row. The Hub's
`social_bias_frames` is the per-annotation layout (whoTarget, intentYN, sexYN, offensiveYN, ...,
WorkerId, HITId, post, targetCategory, dataSource; every cell a string, "" when unanswered); the
aggregated layout is the same without the annotator columns. `post` and the category's column are
required. A cell may also be a number or null (a copy written from pandas: NaN or null is an empty
cell). The rows go through data.py's own aggregation and checks; a problem is `FILE: row N: problem`.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterator

from megazoo.eval.readers.hf_source import NumberedRows, RowError, is_hf_source
from megazoo.tasks.bias.data import (CATEGORIES, COLUMNS, Post, SbicFormatError, aggregated_posts, annotation_posts,
                                     check_category, is_aggregated)

SCHEMA = ("the SBIC CSV columns (the Hugging Face `social_bias_frames` schema): post, offensiveYN, intentYN, sexYN, "
          "speakerMinorityYN, whoTarget, targetCategory, WorkerId, HITId, ...")

__all__ = ["is_hf_source", "read_posts_hf"]


class SbicRowError(RowError, SbicFormatError):
    """A bad row of an SBIC dataset: `FILE: row N: problem`."""


def _cells(rows: NumberedRows) -> Iterator[tuple[int, dict[str, str]]]:
    """(row number, row) with every cell as the CSV's text: None and NaN are "", numbers their digits."""
    for n, row in rows:
        out = {}
        for key, value in row.items():
            if value is None or (isinstance(value, float) and math.isnan(value)):
                value = ""
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                value = str(value)
            elif not isinstance(value, str):
                raise SbicFormatError(rows.text, n, f"{key} must be text or a number (as in the CSV), got "
                                                    f"{type(value).__name__} {value!r:.40}")
            out[key] = value
        yield n, out


def read_posts_hf(path: str | os.PathLike, category: str = "offensive", aggregated: bool | None = None,
                  split: str | None = None) -> list[Post]:
    """The posts of one split in either layout (told apart by the annotator columns unless `aggregated`
    says which), aggregated as data.read_annotations / data.read_aggregated do."""
    category = check_category(category)
    column = "targetCategory" if category.startswith("group:") else CATEGORIES[category]
    rows = NumberedRows(path, ("post", column), SCHEMA, optional=COLUMNS, split=split, error=SbicRowError)
    with rows.native_errors(SbicFormatError):
        cells = _cells(rows)
        first = next(cells)  # iter_rows raises for a split without rows
        header = list(first[1])
        if aggregated is None:
            aggregated = is_aggregated(header)
        posts = aggregated_posts if aggregated else annotation_posts
        return posts(rows.text, header, itertools.chain([first], cells), category)
