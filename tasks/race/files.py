"""Paths and readers the race stages share without importing torch (their parsers declare the
derived outputs, so `--help` and the output policy stay fast).

    predictions_path("out/a.json") -> out/a.predictions.json   (what evaluate/ensemble write beside --out)
    read_json(path, what)          -> the object, or a one-line ValueError `file:line: problem`
    missing(message)               -> a FileNotFoundError the boundary reports as a user's mistake (exit 2)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from megazoo.core.fs import read_utf8  # `file:line: not valid UTF-8 ...` (a ValueError)
from megazoo.eval.readers.common import MissingFile  # noqa: F401 (the race readers raise it)


def predictions_path(out: str | os.PathLike) -> Path:
    """FILE.json -> FILE.predictions.json (the predictions beside a summary)."""
    out = Path(out)
    stem = out.name[:-len(".json")] if out.name.endswith(".json") else out.name
    return out.with_name(stem + ".predictions.json")


def read_json(path: str | os.PathLike, what: str) -> object:
    """The JSON object of `path`; a decoding or syntax error names the file and line."""
    text = read_utf8(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{err.lineno}: not {what} (not valid JSON: {err.msg})") from None
