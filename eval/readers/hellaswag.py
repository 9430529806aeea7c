"""HellaSwag jsonl (Zellers et al. 2019): pick the ending of a context among four.

One object per line with ``ind``, ``activity_label``, ``ctx_a``, ``ctx_b``, ``ctx``, ``endings``
(four strings), ``label`` (0-3; absent in the test file), ``split``, ``split_type`` and
``source_id``. Prompt building (e.g. lm-eval's ``activity_label: ctx_a + ctx_b.capitalize()``)
is left to the suite.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, field, read_jsonl, string_list


@dataclass
class HellaSwagExample:
    ind: int
    activity_label: str
    ctx_a: str
    ctx_b: str
    ctx: str
    endings: list[str]
    label: int | None
    split: str = ""
    split_type: str = ""
    source_id: str = ""


def read_hellaswag(path: str | os.PathLike, require_labels: bool = True) -> list[HellaSwagExample]:
    """The examples of a HellaSwag jsonl file, in file order."""
    what = "HellaSwag jsonl: objects with ctx_a, ctx_b, ctx, endings and label"
    examples = []
    for line, obj in read_jsonl(path, what):
        endings = string_list(obj, "endings", path, line, size=4)
        label = None
        if "label" in obj:
            label = field(obj, "label", int, path, line)
            if not 0 <= label < 4:
                raise ReaderError(path, line, f"field 'label' must be 0-3, got {label}")
        elif require_labels:
            raise ReaderError(path, line, "missing field 'label' (pass require_labels=False for test files)")
        examples.append(
            HellaSwagExample(
                ind=field(obj, "ind", int, path, line),
                activity_label=field(obj, "activity_label", str, path, line),
                ctx_a=field(obj, "ctx_a", str, path, line),
                ctx_b=field(obj, "ctx_b", str, path, line),
                ctx=field(obj, "ctx", str, path, line),
                endings=endings,
                label=label,
                split=str(obj.get("split", "")),
                split_type=str(obj.get("split_type", "")),
                source_id=str(obj.get("source_id", "")),
            )
        )
    return examples
