"""HANS (McCoy et al. 2019): ``heuristics_evaluation_set.txt``, a tab-separated file with a header.

The header names the columns ``gold_label``, ``sentence1_binary_parse``,
``sentence2_binary_parse``, ``sentence1_parse``, ``sentence2_parse``, ``sentence1``,
``sentence2``, ``pairID``, ``heuristic``, ``subcase`` and ``template``; ``gold_label`` is
``entailment`` or ``non-entailment``. Columns are found by header name. Rows labelled ``-``
(no consensus, MNLI's convention) are skipped, as the Hugging Face loader does.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, numbered_lines

HANS_LABELS: tuple[str, ...] = ("entailment", "non-entailment")
_NEEDED = ("gold_label", "sentence1", "sentence2", "pairID", "heuristic", "subcase", "template")


@dataclass
class HansExample:
    pair_id: str
    premise: str
    hypothesis: str
    label: int  # 0 entailment, 1 non-entailment
    heuristic: str
    subcase: str
    template: str


def read_hans(path: str | os.PathLike) -> list[HansExample]:
    """The examples of a HANS tsv file, in file order."""
    what = (
        "HANS tsv with a header row "
        "(gold_label ... sentence1, sentence2, pairID, heuristic, subcase, template)"
    )
    rows = numbered_lines(path, what)
    header_line, header = next(rows)
    names = header.split("\t")
    missing = [n for n in _NEEDED if n not in names]
    if missing:
        raise ReaderError(path, header_line, f"header lacks column(s) {', '.join(missing)}; expected {what}")
    col = {n: names.index(n) for n in _NEEDED}
    examples = []
    for line, text in rows:
        cells = text.split("\t")
        if len(cells) != len(names):
            raise ReaderError(path, line, f"{len(cells)} tab-separated columns, the header has {len(names)}")
        gold = cells[col["gold_label"]]
        if gold == "-":
            continue
        if gold not in HANS_LABELS:
            raise ReaderError(path, line, f"gold_label must be entailment or non-entailment, got {gold!r:.40}")
        examples.append(
            HansExample(
                pair_id=cells[col["pairID"]],
                premise=cells[col["sentence1"]],
                hypothesis=cells[col["sentence2"]],
                label=HANS_LABELS.index(gold),
                heuristic=cells[col["heuristic"]],
                subcase=cells[col["subcase"]],
                template=cells[col["template"]],
            )
        )
    if not examples:
        raise ReaderError(path, header_line + 1, "no examples after the header")
    return examples
