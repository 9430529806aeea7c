"""The items of a top-level JSON array file, streamed: DPR's nq-*.json and Wizard of Wikipedia's files
are one JSON array of several GB, which json.load would hold whole (and a position-tracking scan
made quadratic: issue #38).

    for n, item in array_items(path, "a DPR nq-*.json file"): ...   # n counts the items from 1

ijson's C backend (yajl) parses the file in 64 KiB chunks and builds one item at a time, so the
time is linear in the file and the memory bounded by the largest item. Floats come out as float
(use_float), not Decimal. A gzip file is read directly, known by its first two bytes whatever its
name; a UTF-8 byte-order mark is skipped.

ijson gives no positions, so the normal path counts no lines. The errors:
- an item the caller rejects: ItemError, `FILE: item N: problem` (the caller raises it);
- a syntax error or a truncated array: `FILE:LINE: not valid JSON after item N (yajl's words)`; the
  line is found on the error path only (from where yajl stopped in its last chunk, then counting
  newlines up to there), and when it cannot be told the message is `FILE: not valid JSON ...`;
- a byte that is not UTF-8: `FILE:LINE: not valid UTF-8 (byte 0xNN at column C); ...`, the wording
  of core/fs/text.py, found by decoding the file up to where the parser stopped (error path only);
- no file: MissingFile; an empty file or one that is not an array: `FILE:LINE: problem`.
Every one is a ValueError (ReaderError) or FileNotFoundError, which the CLI boundary reports as one
line with exit code 2.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator

import ijson

from megazoo.core.fs.text import PROBLEM as NOT_UTF8
from megazoo.eval.readers.common import LineError, MissingFile, ReaderError

GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
SPACE = b" \t\r\n"
BLOCK = 1 << 20  # bytes per read on the error path and for the first bytes


class ItemError(ReaderError):
    """A problem with one item of a JSON array file, whose line is not known: `FILE: item N: problem`
    (item None: `FILE: problem`). A sibling of LineError; `line` is 0."""

    def __init__(self, path, item: int | None, problem: str):
        # ReaderError's own __init__, not super(): a package's subclass may also derive from its
        # LineError class (so that `except RetrievalFormatError` still sees every problem)
        ReaderError.__init__(self, path, 0, problem)
        self.item = item
        self.args = (f"{self.path}: item {item}: {problem}" if item is not None else f"{self.path}: {problem}",)

    def __str__(self) -> str:
        return self.args[0]


def open_bytes(path):
    """The file for reading bytes; decompressed on the fly when its first two bytes are gzip's."""
    with open(path, "rb") as f:
        gz = f.read(2) == GZIP_MAGIC
    return gzip.open(path, "rb") if gz else open(path, "rb")


class Tracked:
    """A binary file that remembers the last chunk it gave the parser and where that chunk starts,
    so that the error path can tell where yajl stopped."""

    def __init__(self, f, offset: int):
        self.f, self.start, self.end, self.chunk = f, offset, offset, b""

    def read(self, size: int = -1) -> bytes:
        data = self.f.read(size)
        if size:  # ijson's read(0) probes the type of the file
            self.start, self.end, self.chunk = self.end, self.end + len(data), data
        return data


def array_items(path, what: str, error: type[ReaderError] = LineError,
                item_error: type[ItemError] = ItemError) -> Iterator[tuple[int, object]]:
    """(n, item) for each item of the JSON array that is the file `path`, n from 1, lazily. `what`
    names the expected content in messages; `error(path, line, problem)` is raised where a line is
    known, `item_error(path, None, problem)` where not (see the module doc)."""
    if not os.path.isfile(path):
        raise MissingFile(f"{os.fspath(path)}: no such file (expected {what})")
    n = 0
    with open_bytes(path) as raw:
        try:
            f = Tracked(raw, _array_start(raw, path, what, error))
            try:
                for item in ijson.items(f, "item", use_float=True):
                    n += 1
                    yield n, item
            except ijson.JSONError as err:
                raise json_error(path, f, n, err, error, item_error) from None
        except (EOFError, zlib.error, gzip.BadGzipFile) as err:  # a truncated or corrupted .gz
            raise item_error(path, None, f"not a readable gzip file after item {n} ({err})") from None


def _array_start(f, path, what: str, error) -> int:
    """Where the parser starts (after a BOM), once the first byte that is not white space is `[`;
    `f` is left there."""
    return value_start(f, path, what, error, b"[", lambda found: f"expected a JSON array ({what}), found {found!r}")


def value_start(f, path, what: str, error, opener: bytes, wrong) -> int:
    """Where the parser starts (after a BOM), once the first byte that is not white space is `opener`
    (`[` or `{`); `f` is left there. Another first byte: error(path, its line, wrong(that character))."""
    skip, newlines, first = 0, 0, True
    while True:
        block = f.read(BLOCK)
        if first and block.startswith(BOM):
            skip, block = len(BOM), block[len(BOM):]
        first = False
        if not block:
            raise error(path, newlines + 1, f"the file is empty (expected {what})")
        kept = block.lstrip(SPACE)
        if kept:
            newlines += block.count(b"\n", 0, len(block) - len(kept))
            if kept[:1] != opener:
                raise error(path, newlines + 1, wrong(kept[:4].decode("utf-8", "replace")[:1]))
            f.seek(skip)
            return skip
        newlines += block.count(b"\n")


# the error path -------------------------------------------------------------------------------------
def json_error(path, f: Tracked, n: int | None, err: Exception, error, item_error) -> ReaderError:
    """The exception for a parse error of yajl after `n` good items (None: before the items; see the
    module doc), the item named by item_error's noun (lined_json's articles)."""
    noun = getattr(item_error, "noun", "item")
    words = err.args[0] if err.args else str(err)
    words = words if isinstance(words, bytes) else str(words).encode("utf-8", "replace")
    bad = first_bad_utf8(path, f.end)
    if bad is not None:
        line, column, byte = bad
        return error(path, line, NOT_UTF8.format(byte=byte, column=column))
    first = words.split(b"\n")[0].decode("utf-8", "replace").strip()
    where = "" if n is None else f"after {noun} {n} " if n else f"in {noun} 1 "
    problem = f"not valid JSON {where}({first})"
    at = offset_in_chunk(words, f.chunk) if f.chunk else len(f.chunk)  # no chunk: the parser met the end
    if at is None:
        return item_error(path, None, problem)
    return error(path, line_before(path, f.start + at), problem)


def offset_in_chunk(words: bytes, chunk: bytes) -> int | None:
    """Where in `chunk` yajl stopped, read back from its verbose message: the second line shows the
    chunk's bytes 30 before to 30 after that place (newlines as spaces), after 40 - offset spaces when
    the place is in the first 30 bytes, else after 10. None unless exactly one place fits."""
    lines = words.split(b"\n")
    if len(lines) < 3 or b"(right here)" not in lines[2]:
        return None
    shown, flat = lines[1], chunk.replace(b"\n", b" ").replace(b"\r", b" ")
    fits = {o for o in range(min(30, len(chunk) + 1)) if shown == b" " * (40 - o) + flat[:o + 30]}
    window = shown[10:] if shown.startswith(b" " * 10) else b""
    at = flat.find(window) if window else -1
    while at != -1:
        if at + 30 <= len(chunk) and (len(window) == 60 or at + len(window) == len(flat)):
            fits.add(at + 30)
        at = flat.find(window, at + 1)
    return fits.pop() if len(fits) == 1 else None


def line_before(path, offset: int) -> int:
    """The line of the last byte before `offset` that is not white space (yajl stops after the token
    it rejects, or at the end of the file)."""
    newlines, trailing, pos = 0, 0, 0
    with open_bytes(path) as f:
        while pos < offset:
            block = f.read(min(BLOCK, offset - pos))
            if not block:
                break
            pos += len(block)
            newlines += block.count(b"\n")
            kept = block.rstrip(SPACE)
            trailing = block.count(b"\n", len(kept)) + (0 if kept else trailing)
    return newlines - trailing + 1


def first_bad_utf8(path, upto: int) -> tuple[int, int, int] | None:
    """(line, byte column, byte) of the first byte that is not UTF-8 among the first `upto` bytes."""
    line, line_start, pos, carry = 1, 0, 0, b""
    with open_bytes(path) as f:
        while pos < upto:
            block = f.read(min(BLOCK, upto - pos))
            if not block:
                break
            data, base = carry + block, pos - len(carry)
            pos += len(block)
            carry, bad = b"", None
            try:
                data.decode("utf-8")
                good = len(data)
            except UnicodeDecodeError as e:
                good = e.start
                if e.end == len(data) and e.reason == "unexpected end of data":
                    carry = data[good:]  # a character cut by the block's end
                else:
                    bad = data[good]
            last = data.rfind(b"\n", 0, good)
            if last != -1:
                line, line_start = line + data.count(b"\n", 0, good), base + last + 1
            if bad is not None:
                return line, base + good - line_start + 1, bad
    return None
