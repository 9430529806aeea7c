"""JSON documents of nested formats (SQuAD v1.1/v2.0, BioASQ's SQuAD-style files), read two ways.

Streamed, for the data files, which may be large (issue #38):

    for n, article in member_items(path, "data", "a SQuAD JSON file", SquadFormatError, SquadArticleError):
    version = member_value(path, "version")      # a top-level scalar, before or after "data"

member_items yields the items of the array under one top-level key, one at a time, with ijson's C
backend (eval/readers/json_stream.py: time linear in the file, memory bounded by one item, a gzip
read directly). ijson gives no positions, so a bad item is `FILE: article N: problem` (ArticleError,
an ItemError); a syntax error, a truncated file or a byte that is not UTF-8 is `FILE:LINE: problem`
where the line can be told on the error path, as json_stream's array_items does.

Whole, for small files whose every object must know its line (predictions, golden files):

    root = load_lined_json(path, "SQuAD-v1.1 JSON", SquadFormatError)
    root["data"][0].line        # the line of that object's `{`

json.load with every object a `Lined` dict; a missing file is MissingFile, an undecodable, empty or
malformed one the given LineError class (`file:line: problem`).
"""
from __future__ import annotations

import bisect
import gzip
import json
import os
import zlib
from collections.abc import Iterator
from json import decoder, scanner

import ijson

from megazoo.eval.readers.common import LineError, MissingFile, read_text
from megazoo.eval.readers.json_stream import ItemError, Tracked, json_error, open_bytes, value_start


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


# streamed --------------------------------------------------------------------------------------------
class ArticleError(ItemError):
    """A bad item of the array member_items streams, whose line is not known: `FILE: article N:
    problem` (item None: `FILE: problem`)."""

    noun = "article"

    def __init__(self, path, item: int | None, problem: str):
        ItemError.__init__(self, path, item, problem)
        if item is not None:
            self.args = (f"{self.path}: {self.noun} {item}: {problem}",)


def member_items(path: str | os.PathLike, key: str, what: str, error: type[LineError] = LineError,
                 item_error: type[ItemError] = ArticleError) -> Iterator[tuple[int, object]]:
    """(n, item) for each item of the array `root[key]` of the JSON object file `path` (or its gzip),
    n from 1, lazily (see the module doc). The keys before `key` are read first (a cheap look at the
    file's head: "data" missing or not an array is an error before any item); the keys after it are
    parsed and checked for syntax but not kept."""
    if not os.path.isfile(path):
        raise MissingFile(f"{os.fspath(path)}: no such file (expected {what})")
    _check_head(path, key, what, error, item_error)
    n = 0
    with open_bytes(path) as raw:
        try:
            f = Tracked(raw, _object_start(raw, path, what, error))
            try:
                for item in ijson.items(f, f"{key}.item", use_float=True):
                    n += 1
                    yield n, item
            except ijson.JSONError as err:
                raise json_error(path, f, n, err, error, item_error) from None
        except (EOFError, zlib.error, gzip.BadGzipFile) as err:  # a truncated or corrupted .gz
            raise item_error(path, None, f"not a readable gzip file after {item_error.noun} {n} ({err})") from None


def member_value(path: str | os.PathLike, key: str, default=None):
    """The value of the top-level `key` of a JSON object file that member_items has read without error
    (so no error is worded here); `default` when absent. Stops at the key: free when it comes first,
    one pass of yajl's tokenizer without building objects when it comes last (SQuAD v1.1's "version")."""
    with open_bytes(path) as f:
        f.seek(_object_start(f, path, "", LineError))
        return next(iter(ijson.items(f, key, use_float=True)), default)


def _object_start(f, path, what: str, error) -> int:
    """Where the parser starts (after a BOM), once the first byte that is not white space is `{`."""
    def wrong(found: str) -> str:
        return f"{'a JSON array' if found == '[' else f'not valid JSON: found {found!r}'}; expected a JSON object ({what})"

    return value_start(f, path, what, error, b"{", wrong)


def _check_head(path, key: str, what: str, error, item_error) -> None:
    """`root[key]` must be there and be an array: the top-level events up to its value (few, as the
    key comes first or after a few scalars in the formats read here)."""
    with open_bytes(path) as raw:
        try:
            f = Tracked(raw, _object_start(raw, path, what, error))
            try:
                found = None
                for prefix, event, value in ijson.parse(f, use_float=True):
                    if found:
                        if event != "start_array":
                            kind = {"start_map": "an object", "string": "a string", "null": "null"}.get(event, event)
                            raise item_error(path, None, f"the file's {key!r} must be a list, got {kind}")
                        return
                    if prefix == "" and event == "map_key" and value == key:
                        found = True
                    elif prefix == "" and event == "end_map":
                        raise item_error(path, None, f"the file has no {key!r} (expected {what})")
            except ijson.JSONError as err:
                raise json_error(path, f, None, err, error, item_error) from None
        except (EOFError, zlib.error, gzip.BadGzipFile):
            return  # a truncated or corrupted .gz: the main pass reports it, with the items read before


