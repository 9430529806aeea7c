"""Reading documents from text/JSONL files, and splitting text into sentences.

Documents carry where they came from (file, line) so that a bad line is reported by name.
Input formats, chosen by extension (or `fmt`):
  .jsonl / .json   one JSON object per line; the document is obj[json_key] (Megatron's loose JSON)
  anything else    plain text: one document per non-blank line (text_mode="line"), documents
                   separated by blank lines ("blank"), or the whole file as one document ("file")
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Iterator

from megazoo.core.data.errors import DataError

TEXT_MODES = ("line", "blank", "file")


@dataclass
class RawDoc:
    """One undecoded input record: parsing happens in the workers, errors keep file and line."""

    path: str
    line: int
    raw: str
    is_json: bool


def is_json_file(path: str, fmt: str = "auto") -> bool:
    if fmt != "auto":
        return fmt == "jsonl"
    return path.endswith((".jsonl", ".json", ".jsonl.txt"))


def iter_raw_documents(path: str, fmt: str = "auto", text_mode: str = "line") -> Iterator[RawDoc]:
    """Yield the records of one input file without parsing them (cheap, done in the main process)."""
    if not os.path.isfile(path):
        raise DataError(f"{path}: no such input file")
    if text_mode not in TEXT_MODES:
        raise DataError(f"text mode `{text_mode}` unknown; choose one of {TEXT_MODES}")
    as_json = is_json_file(path, fmt)
    lines = _decoded_lines(path)
    if as_json or text_mode == "line":
        for number, line in lines:
            if line.strip():
                yield RawDoc(path, number, line, as_json)
    elif text_mode == "file":
        text = "".join(line for _, line in lines)
        if text.strip():
            yield RawDoc(path, 1, text, False)
    else:  # paragraphs: runs of non-blank lines
        buf: list[str] = []
        start = 1
        for number, line in lines:
            if line.strip():
                if not buf:
                    start = number
                buf.append(line)
            elif buf:
                yield RawDoc(path, start, "".join(buf), False)
                buf = []
        if buf:
            yield RawDoc(path, start, "".join(buf), False)


def _decoded_lines(path: str) -> Iterator[tuple[int, str]]:
    # Decode line by line so that bad UTF-8 is reported with its line (core/fs/text.py).
    from megazoo.core.fs import utf8_lines

    lines = utf8_lines(path, lambda p, line, problem: DataError(f"{p}:{line}: {problem}"))
    for number, line in enumerate(lines, 1):
        yield number, line.replace("\r\n", "\n")


def document_text(doc: RawDoc, json_key: str) -> str:
    """The text of one record; a clear error naming file:line if the record is unusable."""
    if not doc.is_json:
        return doc.raw.strip("\n")
    try:
        obj = json.loads(doc.raw)
    except json.JSONDecodeError as exc:
        raise DataError(f"{doc.path}:{doc.line}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise DataError(f"{doc.path}:{doc.line}: expected a JSON object with key `{json_key}`, "
                        f"got {type(obj).__name__}")
    if json_key not in obj:
        keys = ", ".join(sorted(obj)[:8]) or "none"
        raise DataError(f"{doc.path}:{doc.line}: no key `{json_key}` in this JSON line (its keys: "
                        f"{keys}); pass the right one with --json-key")
    value = obj[json_key]
    if not isinstance(value, str):
        raise DataError(f"{doc.path}:{doc.line}: `{json_key}` is {type(value).__name__}, not a string")
    return value


# ---- sentence splitting ----------------------------------------------------------------------
# A small rule-based splitter (Megatron uses NLTK's punkt, whose model is a download; we stay
# offline). It splits after . ! ? (and closing quotes/brackets) before whitespace and an uppercase
# letter, digit or opening quote, unless the word before the stop is a known abbreviation or a
# single initial; newlines that separate paragraphs always split.

_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "cf", "al",
    "fig", "no", "vol", "pp", "eq", "approx", "inc", "ltd", "co", "corp", "dept", "jan", "feb",
    "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "ph.d",
}
_BOUNDARY = re.compile(r"""([.!?]+["')\]]*)\s+(?=["'(\[]?[A-Z0-9])""")
_WORD_BEFORE = re.compile(r"(\S+)$")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (non-empty, stripped)."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(para.split())
        if not para:
            continue
        start = 0
        for m in _BOUNDARY.finditer(para):
            word = _WORD_BEFORE.search(para[start:m.start(1)])
            token = (word.group(1) if word else "").lower().lstrip("(\"'")
            if token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha()):
                continue
            out.append(para[start:m.end(1)])
            start = m.end()
        if start < len(para):
            out.append(para[start:])
    return [s.strip() for s in out if s.strip()]
