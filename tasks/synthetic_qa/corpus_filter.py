"""The corpus stage's cut and filters (corpus.py samples, cli_corpus.py writes).

Cut: the sample's whitespace is collapsed; one of more than `max_words` words (split at spaces) is
cut to its first `max_words` (counted as cut_at_max_words), and every sample is then cut after its
last full sentence: `.`, `!` or `?` (closing quotes and brackets after it kept) before a space or
the end, not after an abbreviation (a single letter, dotted short parts as "e.g." or "U.S.", or
etc./vs./Mr./Mrs./Dr./cf.).

Then each sample, in order, is dropped by the first rule it fails, counted under the rule's name:

    empty            nothing but spaces (the decoder began with a line end)
    unfinished       no full sentence
    too_short        fewer than `min_words` words after the cut
    source_overlap   shares a word n-gram (`ngram` words, 13 by default: GPT-3's and MT-NLG's
                     decontamination rule) with the source text (words: lowercased `\\w+`, punctuation
                     dropped)
    duplicate        the same words as an earlier kept paragraph
    near_duplicate   a Jaccard similarity of its word 5-gram sets of `near_duplicate` (0.8) or more
                     with an earlier kept paragraph

The source index holds one 64-bit hash per source n-gram (about 70 bytes each in a Python set: 170 MB
for SQuAD v1.1's train contexts); the near-duplicate check looks only at kept paragraphs that share a
5-gram with the sample (an inverted index), so it is linear in the corpus unless many paragraphs
share phrases.
"""

from __future__ import annotations

import os
import re
from collections import Counter, deque
from pathlib import Path

SHINGLE = 5  # words per shingle of the near-duplicate check
ABBREVIATIONS = {"etc", "vs", "mr", "mrs", "dr", "cf"}
REASONS = ("empty", "unfinished", "too_short", "source_overlap", "duplicate", "near_duplicate")
_WORD = re.compile(r"\w+", re.UNICODE)
_END = re.compile(r"[.!?][\"')\]”’]*(?=\s|$)")


def words(text: str) -> list[str]:
    """Lowercased `\\w+` words: what the n-gram rules compare."""
    return _WORD.findall(text.lower())


def _abbreviation(text: str, end: int) -> bool:
    """Whether the `.` at `end` closes an abbreviation rather than a sentence."""
    if text[end] != ".":
        return False
    word = text[:end].rsplit(" ", 1)[-1].lstrip("\"'([“‘")
    parts = word.split(".")
    if len(word) == 1 and word.isalpha() or word.lower() in ABBREVIATIONS:
        return True
    return len(parts) > 1 and all(p.isalpha() and len(p) <= 2 for p in parts)


def cut(text: str, max_words: int) -> tuple[str, bool]:
    """(the text cut to `max_words` words, then after its last full sentence ("" if none), whether the
    word limit cut it)."""
    parts = text.split()
    over = len(parts) > max_words
    text = " ".join(parts[:max_words])
    last = 0
    for m in _END.finditer(text):
        if not _abbreviation(text, m.start()):
            last = m.end()
    return text[:last], over


class SourceIndex:
    """The word n-grams of the source texts (hashed), to drop a sample that copies one."""

    def __init__(self, ngram: int = 13):
        self.ngram = ngram
        self.grams: set[int] = set()
        self.texts = 0

    def _add_words(self, ws: list[str]) -> None:
        n = self.ngram
        self.grams.update(hash(" ".join(ws[i:i + n])) for i in range(len(ws) - n + 1))

    def add_text(self, text: str) -> None:
        self.texts += 1
        self._add_words(words(text))

    def add_lines(self, lines) -> None:
        """A text given line by line (a hard-wrapped file): its n-grams run across the line ends."""
        tail: deque = deque(maxlen=self.ngram - 1)
        for line in lines:
            ws = words(line)
            if ws:
                self._add_words(list(tail) + ws)
                tail.extend(ws)
        self.texts += 1

    def add_file(self, path) -> str:
        """A SQuAD file (.json, .json.gz or a Hugging Face dataset: its contexts) or a plain text file
        (every line); returns which it was read as."""
        from megazoo.eval.readers.hf_source import is_hf_source

        name = os.fspath(path)
        if is_hf_source(name) or name.endswith((".json", ".json.gz")) or Path(name).is_dir():
            from megazoo.tasks.synthetic_qa.squad import iter_squad_paragraphs, read_squad

            if is_hf_source(name) or Path(name).is_dir():
                for _, context in read_squad(name).paragraphs:
                    self.add_text(context)
            else:
                for _, context, _ in iter_squad_paragraphs(name):
                    self.add_text(context)
            return "squad"
        from megazoo.eval.readers.common import text_lines

        self.add_lines(line for _, line in text_lines(name, "a text file or a SQuAD .json file"))
        return "text"

    def hits(self, ws: list[str]) -> bool:
        n = self.ngram
        return any(hash(" ".join(ws[i:i + n])) in self.grams for i in range(len(ws) - n + 1))


class NearDuplicates:
    """Kept paragraphs' word 5-gram sets with an inverted index (shingle -> kept paragraphs)."""

    def __init__(self, threshold: float = 0.8):
        self.threshold = threshold
        self.sets: list[set[int]] = []
        self.postings: dict[int, list[int]] = {}

    @staticmethod
    def shingles(ws: list[str]) -> set[int]:
        if len(ws) <= SHINGLE:
            return {hash(" ".join(ws))}
        return {hash(" ".join(ws[i:i + SHINGLE])) for i in range(len(ws) - SHINGLE + 1)}

    def near(self, shingles: set[int]) -> bool:
        shared = Counter(j for s in shingles for j in self.postings.get(s, ()))
        return any(c / (len(shingles) + len(self.sets[j]) - c) >= self.threshold for j, c in shared.items())

    def add(self, shingles: set[int]) -> None:
        j = len(self.sets)
        self.sets.append(shingles)
        for s in shingles:
            self.postings.setdefault(s, []).append(j)


def select(samples: list[str], min_words: int, max_words: int, source: SourceIndex | None = None,
           near_duplicate: float = 0.8) -> tuple[list[tuple[int, str]], dict]:
    """The kept paragraphs as (index into samples, cut text) and the counts (module doc):
    sampled = kept + every reason's count; cut_at_max_words counts cuts among all samples."""
    counts = {"sampled": len(samples), **{r: 0 for r in REASONS}, "cut_at_max_words": 0, "kept": 0}
    seen: set[str] = set()
    near = NearDuplicates(near_duplicate)
    kept = []
    for i, raw in enumerate(samples):
        text, over = cut(raw, max_words)
        counts["cut_at_max_words"] += over
        ws = words(text)
        if not raw.strip():
            reason = "empty"
        elif not text:
            reason = "unfinished"
        elif len(text.split()) < min_words:
            reason = "too_short"
        elif source is not None and source.hits(ws):
            reason = "source_overlap"
        elif " ".join(ws) in seen:
            reason = "duplicate"
        elif near.near(shingles := near.shingles(ws)):
            reason = "near_duplicate"
        else:
            seen.add(" ".join(ws))
            near.add(shingles)
            kept.append((i, text))
            counts["kept"] += 1
            continue
        counts[reason] += 1
    return kept, counts
