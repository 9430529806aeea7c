"""PIQA (Bisk et al. 2020): ``{train,valid,tests}.jsonl`` plus ``{train,valid}-labels.lst``.

Each jsonl line is ``{"goal", "sol1", "sol2"}`` (newer copies add ``id``); the labels file has
one ``0`` or ``1`` per line, line i labelling object i (the index of the right solution).
By default the labels file is found next to the data as ``<name>-labels.lst``.
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, field, numbered_lines, read_jsonl


@dataclass
class PiqaExample:
    goal: str
    solutions: list[str]
    label: int | None
    id: str = ""


def default_labels_path(path: str | os.PathLike) -> str:
    """``valid.jsonl`` -> ``valid-labels.lst`` in the same folder."""
    base = os.fspath(path)
    return (base[: -len(".jsonl")] if base.endswith(".jsonl") else base) + "-labels.lst"


def read_piqa(
    path: str | os.PathLike, labels_path: str | os.PathLike | None = None, require_labels: bool = True
) -> list[PiqaExample]:
    """The examples of a PIQA jsonl file with their labels, in file order."""
    what = "PIQA jsonl: objects with goal, sol1 and sol2"
    examples = [
        PiqaExample(
            goal=field(obj, "goal", str, path, line),
            solutions=[field(obj, "sol1", str, path, line), field(obj, "sol2", str, path, line)],
            label=None,
            id=str(obj.get("id", "")),
        )
        for line, obj in read_jsonl(path, what)
    ]
    labels_path = default_labels_path(path) if labels_path is None else labels_path
    if not os.path.isfile(labels_path):
        if require_labels:
            raise FileNotFoundError(
                errno.ENOENT,
                f"{os.fspath(labels_path)}: no such labels file for {os.fspath(path)} "
                "(pass labels_path=..., or require_labels=False for the test file)"
            )
        return examples
    labels = []
    for line, text in numbered_lines(labels_path, "PIQA labels: one 0 or 1 per line"):
        if text.strip() not in ("0", "1"):
            raise ReaderError(labels_path, line, f"a label must be 0 or 1, got {text.strip()!r:.40}")
        labels.append(int(text))
    if len(labels) != len(examples):
        raise ReaderError(
            labels_path, len(labels), f"{len(labels)} labels for {len(examples)} examples in {os.fspath(path)}"
        )
    for example, label in zip(examples, labels):
        example.label = label
    return examples
