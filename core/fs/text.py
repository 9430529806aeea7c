"""Reading a user's text file as UTF-8, with one message for a byte that does not decode:

    PATH:LINE: not valid UTF-8 (byte 0xNN at column C); save the file as UTF-8

LINE counts "\n" (a CRLF file reads the same), C is the byte's 1-based column in that line. Every
reader of a text file the user names goes through here, so the wording is the same whatever the
command. A reader with its own error class (a `file:line: problem` LineError, a CurateError, ...)
passes `error`: a callable (path, line, problem) -> exception; the default is NotUtf8, a ValueError,
which the CLI boundary reports as one line with exit code 2.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

PROBLEM = "not valid UTF-8 (byte 0x{byte:02x} at column {column}); save the file as UTF-8"


class NotUtf8(ValueError):
    """A byte that does not decode; str() is the whole `PATH:LINE: problem` line."""

    def __init__(self, path, line: int, problem: str):
        super().__init__(f"{os.fspath(path)}:{line}: {problem}")
        self.path, self.line, self.problem = path, line, problem


ErrorFactory = Callable[[object, int, str], Exception]


def decode_utf8(data: bytes, path, error: ErrorFactory | None = None, first_line: int = 1) -> str:
    """`data` (the file's bytes, or one line's starting at line `first_line`) as text."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_start = data.rfind(b"\n", 0, err.start) + 1
        line = first_line + data.count(b"\n", 0, err.start)
        problem = PROBLEM.format(byte=data[err.start], column=err.start - line_start + 1)
        raise (error or NotUtf8)(path, line, problem) from None


def read_utf8(path, error: ErrorFactory | None = None) -> str:
    """The whole file as text (an OSError, e.g. a missing file, is the caller's to word)."""
    with open(path, "rb") as f:
        return decode_utf8(f.read(), path, error)


def utf8_lines(path, error: ErrorFactory | None = None) -> Iterator[str]:
    """Each line with its line end, decoded one at a time (streaming: a large file is never held whole,
    and a reader such as csv sees the physical lines in order)."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            yield decode_utf8(raw, path, error, number)
