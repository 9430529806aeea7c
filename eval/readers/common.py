"""Shared pieces of the readers: the error type, file opening and JSON-lines parsing.

Every problem with an input file raises ``ReaderError``, whose message names the file and the
1-based line (``path, line N: what is wrong``), so a user can open the file at that place.

The line readers stream (issue #38): ``text_lines`` decodes one line at a time, so a file of many GB
is read in time linear in its size with memory bounded by its longest line, a gzip file (known by its
first two bytes) is read directly, and a byte that is not UTF-8 is named with its line as in
core/fs/text.py. ``numbered_lines`` and ``read_jsonl`` are built on it; ``read_text`` still returns
the whole file, for the small files that are parsed whole.
"""
from __future__ import annotations

import errno
import gzip
import json
import os
import zlib
from typing import Any, Iterator


class MissingFile(FileNotFoundError):
    """A path the user named that is not there. It carries ENOENT, so the boundary (core/train/
    user_errors.py) reports it as the user's mistake (exit 2); its text is the message alone."""

    def __init__(self, message: str):
        super().__init__(errno.ENOENT, message)

    def __str__(self) -> str:
        return self.strerror


class ReaderError(ValueError):
    """A task file in a wrong format, with a missing field, or empty; names file and line."""

    def __init__(self, path: str | os.PathLike, line: int, problem: str):
        self.path = os.fspath(path)
        self.line = line
        self.problem = problem
        super().__init__(f"{self.path}, line {line}: {problem}")


class LineError(ReaderError):
    """A ReaderError written `file:line: problem`, the form the task packages' readers use."""

    def __init__(self, path: str | os.PathLike, line: int, problem: str):
        super().__init__(path, line, problem)
        self.args = (f"{self.path}:{line}: {problem}",)

    def __str__(self) -> str:
        return self.args[0]


def read_text(path: str | os.PathLike, what: str, error: type[ReaderError] = ReaderError) -> str:
    """The whole UTF-8 file; an undecodable or empty (blank) file is a ReaderError (or `error`, e.g.
    LineError for the `file:line: problem` form)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, f"{os.fspath(path)}: no such file (expected {what})")
    from megazoo.core.fs import read_utf8

    text = read_utf8(path, error)  # `file:line: not valid UTF-8 (byte ...)`, raised as `error`
    if not text.strip():
        raise error(path, 1, f"the file is empty (expected {what})")
    return text


def text_lines(path: str | os.PathLike, what: str,
               error: type[ReaderError] = ReaderError) -> Iterator[tuple[int, str]]:
    """(line number from 1, line with its line end) for every line of a UTF-8 text file or its gzip,
    decoded one line at a time: time linear in the file, memory bounded by the longest line. Lines
    end at "\n" only (a CRLF line keeps its "\r\n"), so csv.reader can read the stream as it reads a
    file opened with newline="". A missing file is MissingFile; a byte that is not UTF-8 is
    `error(path, line, "not valid UTF-8 (byte 0xNN at column C); ...")` (core/fs/text.py's wording);
    a corrupted or truncated gzip is `error(path, line, "not a readable gzip file ...")`, where line
    is the first one not read. Raised when the stream reaches the bad place, after the good lines."""
    if not os.path.isfile(path):
        raise MissingFile(f"{os.fspath(path)}: no such file (expected {what})")
    from megazoo.core.fs.text import decode_utf8
    from megazoo.eval.readers.json_stream import open_bytes  # json_stream imports this module

    number = 0
    with open_bytes(path) as f:
        try:
            for raw in f:  # a binary file splits at b"\n" only
                number += 1
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    line = decode_utf8(raw, path, error, number)  # raises, naming line and column
                yield number, line
        except (EOFError, zlib.error, gzip.BadGzipFile) as err:
            raise error(path, number + 1, f"not a readable gzip file ({err}); expected {what}") from None


def numbered_lines(path: str | os.PathLike, what: str,
                   error: type[ReaderError] = ReaderError) -> Iterator[tuple[int, str]]:
    """(line number, line without its newline) for each non-blank line of a non-empty file,
    streamed (text_lines); a file with no such line is `error(path, 1, "the file is empty ...")`,
    raised at its end."""
    # split on "\n" only: str.splitlines would also break at U+2028 etc. inside JSON strings
    found = False
    for number, line in text_lines(path, what, error):
        line = (line[:-1] if line.endswith("\n") else line).rstrip("\r")
        if line.strip():
            found = True
            yield number, line
    if not found:
        raise error(path, 1, f"the file is empty (expected {what})")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their ``\n`` kept, split at ``\n`` only."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def read_jsonl(path: str | os.PathLike, what: str,
               error: type[ReaderError] = ReaderError) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSON-lines file of objects (or its gzip),
    streamed one line at a time (numbered_lines); problems raise ReaderError, or `error` (LineError for
    the `file:line: problem` form), when the stream reaches them."""
    for number, line in numbered_lines(path, what, error):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise error(path, number, f"not valid JSON ({err.msg}); expected {what}") from None
        if not isinstance(obj, dict):
            raise error(path, number, f"expected a JSON object ({what}), got {type(obj).__name__}")
        yield number, obj


_TYPE_NAMES = {str: "a string", bool: "true/false", int: "an integer", list: "a list", dict: "an object"}


def field(obj: dict[str, Any], name: str, kind: type, path: str | os.PathLike, line: int) -> Any:
    """``obj[name]`` checked to be of ``kind``; a missing or mistyped field is a ReaderError."""
    if name not in obj:
        raise ReaderError(path, line, f"missing field {name!r}")
    value = obj[name]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        raise ReaderError(
            path, line, f"field {name!r} must be {_TYPE_NAMES.get(kind, kind.__name__)}, got {value!r:.60}"
        )
    return value


def string_list(
    obj: dict[str, Any], name: str, path: str | os.PathLike, line: int, size: int | None = None
) -> list[str]:
    """``obj[name]`` checked to be a list of strings (of ``size`` items, when given)."""
    value = field(obj, name, list, path, line)
    if not all(isinstance(v, str) for v in value):
        raise ReaderError(path, line, f"field {name!r} must be a list of strings")
    if size is not None and len(value) != size:
        raise ReaderError(path, line, f"field {name!r} must have {size} items, got {len(value)}")
    return value
