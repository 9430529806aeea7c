"""WiC, the Word-in-Context dataset (Pilehvar and Camacho-Collados 2019), in its official format.

Each split is two files of equal length: ``<split>.data.txt``, tab-separated
``target_word  PoS  index1-index2  example_1  example_2`` (PoS ``N`` or ``V``; the indices are
the 0-based token positions of the target in the two whitespace-tokenised examples), and
``<split>.gold.txt`` with ``T`` or ``F`` per line (same sense or not). By default the gold file
is found next to the data file; the test split ships without one (``require_labels=False``).

SuperGLUE's copy (``val.jsonl``: ``word``, ``sentence1``, ``sentence2``, ``start1``, ``end1``,
``start2``, ``end2``, ``label``) is read too, from a ``.jsonl`` path. Either way an example carries
the character spans ``start1:end1`` / ``start2:end2`` of the target as written in each sentence
("carries"), while ``word`` is the lemma ("carry"); prompts quote ``sentence1[start1:end1]``.
"""
from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, field, numbered_lines, read_jsonl


@dataclass
class WicExample:
    word: str
    pos: str
    index1: int
    index2: int
    sentence1: str
    sentence2: str
    label: bool | None
    start1: int = 0  # character span of the target in sentence1 / sentence2, as written there
    end1: int = 0
    start2: int = 0
    end2: int = 0

    @property
    def word1(self) -> str:
        """The target as it appears in sentence 1 (inflected), not the lemma."""
        return self.sentence1[self.start1: self.end1]


def token_span(sentence: str, index: int) -> tuple[int, int] | None:
    """Character span of the index-th whitespace-separated token, None when out of range."""
    spans = [m.span() for m in re.finditer(r"\S+", sentence)]
    return spans[index] if 0 <= index < len(spans) else None


def default_gold_path(data_path: str | os.PathLike) -> str:
    """``dev.data.txt`` -> ``dev.gold.txt`` in the same folder."""
    base = os.fspath(data_path)
    return base[: -len(".data.txt")] + ".gold.txt" if base.endswith(".data.txt") else base + ".gold.txt"


def read_wic(
    data_path: str | os.PathLike, gold_path: str | os.PathLike | None = None, require_labels: bool = True
) -> list[WicExample]:
    """The examples of a WiC split with their gold labels, in file order."""
    if os.fspath(data_path).endswith(".jsonl"):
        return _read_superglue(data_path, require_labels)
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
        span1, span2 = token_span(sentence1, index1), token_span(sentence2, index2)
        if span1 is None or span2 is None:
            problem = f"token index {indices} is outside example_{1 if span1 is None else 2}"
            raise ReaderError(data_path, line, problem)
        examples.append(WicExample(word, pos, index1, index2, sentence1, sentence2, None, *span1, *span2))
    gold_path = default_gold_path(data_path) if gold_path is None else gold_path
    if not os.path.isfile(gold_path):
        if require_labels:
            raise FileNotFoundError(
                errno.ENOENT,
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


def _read_superglue(path, require_labels: bool) -> list[WicExample]:
    """SuperGLUE's WiC jsonl; the token indices are derived from the character spans."""
    what = "SuperGLUE WiC jsonl: objects with word, sentence1, sentence2, start1, end1, start2, end2, label"
    examples = []
    for line, obj in read_jsonl(path, what):
        s1, s2 = field(obj, "sentence1", str, path, line), field(obj, "sentence2", str, path, line)
        spans = [field(obj, k, int, path, line) for k in ("start1", "end1", "start2", "end2")]
        if not (0 <= spans[0] < spans[1] <= len(s1) and 0 <= spans[2] < spans[3] <= len(s2)):
            raise ReaderError(path, line, f"start/end spans {spans} do not fit the sentences")
        label = None
        if "label" in obj:
            label = obj["label"]
            if label not in (True, False, 0, 1):
                raise ReaderError(path, line, f"field 'label' must be true/false, got {label!r:.20}")
            label = bool(label)
        elif require_labels:
            raise ReaderError(path, line, "missing field 'label' (pass require_labels=False for the test split)")
        index1, index2 = len(s1[: spans[0]].split()), len(s2[: spans[2]].split())
        examples.append(WicExample(field(obj, "word", str, path, line), str(obj.get("pos", "")), index1, index2,
                                   s1, s2, label, *spans))
    return examples
