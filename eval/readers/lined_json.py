"""One JSON document whose objects know their line, for `file:line: problem` errors in readers of
nested formats (SQuAD v1.1/v2.0 and BioASQ's SQuAD-style files).

    root = load_lined_json(path, "SQuAD-v1.1 JSON", SquadFormatError)
    root["data"][0].line        # the line of that object's `{`

json.load with every object a `Lined` dict; a missing file is MissingFile, an undecodable, empty or
malformed one the given LineError class (`file:line: problem`).
"""
from __future__ import annotations

import bisect
import json
import os
from json import decoder, scanner

from megazoo.eval.readers.common import LineError, MissingFile, read_text


class Lined(dict):
    """A JSON object that knows the line it starts on."""

    line = 0


def load_lined_json(path: str | os.PathLike, what: str, error: type[LineError] = LineError):
    """The document at `path` (see the module doc); `what` names the format in the error messages."""
    if not os.path.isfile(path):
        raise MissingFile(f"{os.fspath(path)}: no such file (expected {what})")
    text = read_text(path, what, error)
    breaks = [i for i, c in enumerate(text) if c == "\n"]

    def parse_object(s_and_end, *args):
        obj, end = decoder.JSONObject(s_and_end, *args)
        lined = Lined(obj)
        lined.line = bisect.bisect_left(breaks, s_and_end[1]) + 1
        return lined, end

    dec = json.JSONDecoder()
    dec.parse_object = parse_object
    dec.scan_once = scanner.py_make_scanner(dec)
    try:
        obj, end = dec.raw_decode(text, len(text) - len(text.lstrip()))
    except json.JSONDecodeError as e:
        raise error(path, e.lineno, f"not valid JSON ({e.msg})") from None
    if text[end:].strip():
        raise error(path, bisect.bisect_left(breaks, end) + 1, "extra data after the JSON object")
    return obj
