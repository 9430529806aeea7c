"""What the race stages share without importing torch (their parsers stay fast for `--help` and
the output policy).

    PREDICTIONS            -> ".jsonl": evaluate and ensemble write FILE.predictions.jsonl beside --out
    read_json(path, what)  -> the object, or a one-line ValueError `file:line: problem`
"""

from __future__ import annotations

import json
import os

from megazoo.core.fs import read_utf8  # `file:line: not valid UTF-8 ...` (a ValueError)

PREDICTIONS = ".jsonl"  # the predictions file's format (eval/taskkit.py predictions_path)


def read_json(path: str | os.PathLike, what: str) -> object:
    """The JSON object of `path`; a decoding or syntax error names the file and line."""
    text = read_utf8(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{err.lineno}: not {what} (not valid JSON: {err.msg})") from None
