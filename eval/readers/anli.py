"""Adversarial NLI jsonl (Nie et al. 2020), rounds R1/R2/R3: ``{train,dev,test}.jsonl``.

One object per line with ``uid``, ``context`` (the premise), ``hypothesis`` and ``label``
(``"e"``, ``"n"`` or ``"c"``), plus ``reason``, ``genre`` and others that are not needed here.
``label`` becomes 0 entailment, 1 neutral, 2 contradiction (the order of ``ANLI_LABELS``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, field, read_jsonl

ANLI_LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
_CODES = {"e": 0, "n": 1, "c": 2}


@dataclass
class AnliExample:
    uid: str
    premise: str
    hypothesis: str
    label: int | None


def read_anli(path: str | os.PathLike, require_labels: bool = True) -> list[AnliExample]:
    """The examples of an ANLI jsonl file, in file order."""
    what = "ANLI jsonl: objects with uid, context, hypothesis and label"
    examples = []
    for line, obj in read_jsonl(path, what):
        label = None
        if "label" in obj:
            code = field(obj, "label", str, path, line)
            if code not in _CODES:
                raise ReaderError(path, line, f"field 'label' must be 'e', 'n' or 'c', got {code!r}")
            label = _CODES[code]
        elif require_labels:
            raise ReaderError(
                path, line, "missing field 'label' (pass require_labels=False for unlabelled files)"
            )
        examples.append(
            AnliExample(
                uid=field(obj, "uid", str, path, line),
                premise=field(obj, "context", str, path, line),
                hypothesis=field(obj, "hypothesis", str, path, line),
                label=label,
            )
        )
    return examples
