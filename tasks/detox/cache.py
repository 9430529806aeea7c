"""Toxicity scores cached by text hash: a JSON-lines file of {"key": sha256(scorer key, text), "score"},
appended to as scores arrive, so a rescoring (another filter fraction, the same generations scored
again, a Perspective run stopped by its quota) asks the scorer only for texts it has not seen.

The cache is a resumable output: it is continued, never replaced. So that continuing cannot damage a
file that is not a cache (a --cache pointed at the wrong file), every complete line must be a cache
record, or the file is refused with `file:line: problem` before anything is appended; only a torn
last line (no newline: a run killed mid-write) is dropped, and cut off before the next append.

A long scoring run (the Perspective API at a quota) writes through `appending()`: each score is a
line written and flushed as it arrives, so a killed process loses none that came back (the file is
also fsync'ed every `sync_every` seconds and at the end, against a crash of the machine)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path

from megazoo.eval.readers.common import LineError


def text_key(scorer_key: str, text: str) -> str:
    return hashlib.sha256(f"{scorer_key}\0{text}".encode()).hexdigest()


class ScoreCache:
    def __init__(self, path=None):
        self.path = Path(path) if path else None
        self.scores: dict[str, float] = {}
        self.complete = None  # bytes of complete lines in the file; past them lies a torn line
        if self.path is not None and self.path.exists():
            self._read()

    def _read(self) -> None:
        if self.path.is_dir():
            raise IsADirectoryError(f"--cache {self.path}: a folder; give a file (JSON lines)")
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1  # a last line without a newline is torn
        for n, raw in enumerate(data[:end].split(b"\n")[:-1], 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise LineError(self.path, n, "not UTF-8 text (expected a score cache: {\"key\", \"score\"} lines); "
                                              "give --cache a new file or one this stage wrote") from None
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                key, score = rec["key"], float(rec["score"])
                if not isinstance(key, str):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                raise LineError(self.path, n, "not a score cache line ({\"key\", \"score\"}); give --cache a new "
                                              "file or one this stage wrote") from None
            self.scores[key] = score
        torn = data[end:]
        # a torn line is the head of a record this stage wrote; anything else is someone's text, kept
        if torn and (len(torn) > 200 or not b'{"key": "'.startswith(torn[:9])):
            raise LineError(self.path, data[:end].count(b"\n") + 1, "not a score cache line ({\"key\", \"score\"}); "
                                                                   "give --cache a new file or one this stage wrote")
        self.complete = end

    def get(self, scorer_key: str, text: str) -> float | None:
        return self.scores.get(text_key(scorer_key, text))

    def put_many(self, scorer_key: str, scores: dict[str, float]) -> None:
        lines = []
        for text, score in scores.items():
            k = text_key(scorer_key, text)
            self.scores[k] = float(score)
            lines.append(json.dumps({"key": k, "score": float(score)}) + "\n")
        if self.path is None or not lines:
            return
        with self._open() as f:
            f.write("".join(lines).encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())

    def _open(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "ab")
        if self.complete is not None and f.tell() > self.complete:
            f.truncate(self.complete)  # the torn line this run read past: ours, from a killed run
        self.complete = None
        return f

    @contextmanager
    def appending(self, scorer_key: str, sync_every: float = 1.0):
        """put(text, score): one score into the cache and its file, written as it comes."""
        f = self._open() if self.path is not None else None
        synced = time.monotonic()

        def put(text: str, score: float) -> None:
            nonlocal synced
            k = text_key(scorer_key, text)
            self.scores[k] = float(score)
            if f is None:
                return
            f.write((json.dumps({"key": k, "score": float(score)}) + "\n").encode("utf-8"))
            f.flush()
            if time.monotonic() - synced >= sync_every:
                os.fsync(f.fileno())
                synced = time.monotonic()

        try:
            yield put
        finally:
            if f is not None:
                f.flush()
                os.fsync(f.fileno())
                f.close()
