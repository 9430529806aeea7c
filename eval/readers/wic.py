"""WiC, the Word-in-Context dataset (Pilehvar and Camacho-Collados 2019), in its official format.

Each split is two files of equal length: ``<split>.data.txt``, tab-separated
``target_word  PoS  index1-index2  example_1  example_2`` (PoS ``N`` or ``V``; the indices are
the 0-based token positions of the target in the two whitespace-tokenised examples), and
``<split>.gold.txt`` with ``T`` or ``F`` per line (same sense or not). By default the gold file
is found next to the data file; the test split ships without one (``require_labels=False``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, numbered_lines


@dataclass
class WicExample:
    word: str
    pos: str
    index1: int
    index2: int
    sentence1: str
    sentence2: str
    label: bool | None


def default_gold_path(data_path: str | os.PathLike) -> str:
    """``dev.data.txt`` -> ``dev.gold.txt`` in the same folder."""
    base = os.fspath(data_path)
    return base[: -len(".data.txt")] + ".gold.txt" if base.endswith(".data.txt") else base + ".gold.txt"


def read_wic(
    data_path: str | os.PathLike, gold_path: str | os.PathLike | None = None, require_labels: bool = True
) -> list[WicExample]:
    """The examples of a WiC split with their gold labels, in file order."""
    what = "WiC data: target_word<TAB>PoS<TAB>index1-index2<TAB>example_1<TAB>example_2"
    examples = []
    for line, text in numbered_lines(data_path, what):
        cells = text.split("\t")
        if len(cells) != 5:
            raise ReaderError(data_path, line, f"{len(cells)} tab-separated fields; expected 5 ({what})")
        word, pos, indices, sentence1, sentence2 = cells
        if pos not in ("N", "V"):
            raise ReaderError(data_path, line, f"PoS must be N or V, got {pos!r:.20}")
        try:
            index1, index2 = (int(i) for i in indices.split("-"))
        except ValueError:
            problem = f"the third field must be index1-index2, got {indices!r:.20}"
            raise ReaderError(data_path, line, problem) from None
        examples.append(WicExample(word, pos, index1, index2, sentence1, sentence2, None))
    gold_path = default_gold_path(data_path) if gold_path is None else gold_path
    if not os.path.isfile(gold_path):
        if require_labels:
            raise FileNotFoundError(
                f"{os.fspath(gold_path)}: no such gold file for {os.fspath(data_path)} "
                "(pass gold_path=..., or require_labels=False for the test split)"
            )
        return examples
    labels = []
    for line, text in numbered_lines(gold_path, "WiC gold: one T or F per line"):
        if text.strip() not in ("T", "F"):
            raise ReaderError(gold_path, line, f"a gold label must be T or F, got {text.strip()!r:.20}")
        labels.append(text.strip() == "T")
    if len(labels) != len(examples):
        problem = f"{len(labels)} labels for {len(examples)} examples in {os.fspath(data_path)}"
        raise ReaderError(gold_path, len(labels), problem)
    for example, label in zip(examples, labels):
        example.label = label
    return examples
