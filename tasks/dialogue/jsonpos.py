"""The items of a JSON array with the line each starts on (Wizard of Wikipedia's files are one JSON
array; json.loads loses positions, and an error must name the line of the dialogue or turn).

    for line, value in array_items(text, start, path, what): ...
    members = object_members(text, start, path)   # {key: (line, value, value_start)}

Only the containers walked are parsed by hand; every value is decoded by the json module itself.
"""

from __future__ import annotations

import json

from megazoo.eval.readers.common import LineError

_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


def line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _SPACE:
        pos += 1
    return pos


def _value(text: str, pos: int, path, what: str):
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as e:
        raise LineError(path, line_at(text, e.pos), f"not valid JSON ({e.msg}); expected {what}") from None


def _expect(text: str, pos: int, chars: str, path, what: str) -> int:
    pos = _skip(text, pos)
    if pos >= len(text) or text[pos] not in chars:
        found = repr(text[pos]) if pos < len(text) else "the end of the file"
        raise LineError(path, line_at(text, pos), f"expected one of {chars!r} in {what}, found {found}")
    return pos


def array_items(text: str, start: int, path, what: str):
    """(line, value, value_start) for each item of the JSON array starting at `start`."""
    pos = _expect(text, start, "[", path, what) + 1
    if text[_skip(text, pos): _skip(text, pos) + 1] == "]":
        return
    while True:
        pos = _skip(text, pos)
        value, end = _value(text, pos, path, what)
        yield line_at(text, pos), value, pos
        pos = _expect(text, end, ",]", path, what)
        if text[pos] == "]":
            return
        pos += 1


def object_members(text: str, start: int, path, what: str) -> dict:
    """{key: (line, value, value_start)} of the JSON object starting at `start`."""
    pos = _expect(text, start, "{", path, what) + 1
    out: dict = {}
    if text[_skip(text, pos): _skip(text, pos) + 1] == "}":
        return out
    while True:
        pos = _expect(text, pos, '"', path, what)
        key, pos = _value(text, pos, path, what)
        pos = _expect(text, pos, ":", path, what) + 1
        pos = _skip(text, pos)
        value, end = _value(text, pos, path, what)
        out[key] = (line_at(text, pos), value, pos)
        pos = _expect(text, end, ",}", path, what)
        if text[pos] == "}":
            return out
        pos += 1
