"""WinoGrande jsonl (Sakaguchi et al. 2020): fill the blank ``_`` with one of two options.

One object per line with ``qID``, ``sentence`` (one ``_``), ``option1``, ``option2`` and
``answer`` ("1" or "2"; absent in the test file). ``label`` is the 0-based option index.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, field, read_jsonl


@dataclass
class WinoGrandeExample:
    qid: str
    sentence: str
    options: list[str]
    label: int | None


def read_winogrande(path: str | os.PathLike, require_labels: bool = True) -> list[WinoGrandeExample]:
    """The examples of a WinoGrande jsonl file, in file order."""
    what = "WinoGrande jsonl: objects with qID, sentence, option1, option2 and answer"
    examples = []
    for line, obj in read_jsonl(path, what):
        sentence = field(obj, "sentence", str, path, line)
        if sentence.count("_") != 1:
            raise ReaderError(path, line, "field 'sentence' must contain exactly one blank '_'")
        options = [field(obj, "option1", str, path, line), field(obj, "option2", str, path, line)]
        label = None
        if "answer" in obj:
            answer = field(obj, "answer", str, path, line)
            if answer not in ("1", "2"):
                raise ReaderError(path, line, f"field 'answer' must be \"1\" or \"2\", got {answer!r}")
            label = int(answer) - 1
        elif require_labels:
            raise ReaderError(path, line, "missing field 'answer' (pass require_labels=False for test files)")
        examples.append(
            WinoGrandeExample(
                qid=field(obj, "qID", str, path, line), sentence=sentence, options=options, label=label
            )
        )
    return examples
