"""Shared pieces of the readers: the error type, file opening and JSON-lines parsing.

Every problem with an input file raises ``ReaderError``, whose message names the file and the
1-based line (``path, line N: what is wrong``), so a user can open the file at that place.
"""
from __future__ import annotations

import errno
import json
import os
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


def numbered_lines(path: str | os.PathLike, what: str,
                   error: type[ReaderError] = ReaderError) -> Iterator[tuple[int, str]]:
    """(line number, line without its newline) for each non-blank line of a non-empty file."""
    # split on "\n" only: str.splitlines would also break at U+2028 etc. inside JSON strings
    for number, line in enumerate(read_text(path, what, error).split("\n"), start=1):
        line = line.rstrip("\r")
        if line.strip():
            yield number, line


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` with their ``\n`` kept, split at ``\n`` only."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def read_jsonl(path: str | os.PathLike, what: str,
               error: type[ReaderError] = ReaderError) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSON-lines file of objects; problems raise
    ReaderError, or `error` (LineError for the `file:line: problem` form)."""
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
