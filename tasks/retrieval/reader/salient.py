"""A rule-based salient-span tagger (works offline, no model): the spans REALM-style masked
salient span pretraining masks, and the answers the generated question sets ask for.

    salient_spans("Apollo 11 landed on the Moon on 20 July 1969.")
    -> [Span(0, 9, "entity", "Apollo 11"), Span(24, 28, "entity", "Moon"), Span(32, 44, "date", "20 July 1969")]

Kinds: `date` (day month year, month day year, month year, a bare year 1000-2099), `number`
(digits with separators or decimals, optionally a unit word such as metres or percent), `entity`
(runs of capitalised words, joined by of/de/van/von/the/and inside, a trailing number allowed).
A lone capitalised word that starts a sentence is not an entity (it is capitalised for the
sentence). Overlaps resolve to the earliest, then longest span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|December|"
          "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
_DATE = re.compile(rf"\b(?:\d{{1,2}} (?:{MONTHS}),? \d{{4}}|(?:{MONTHS}) \d{{1,2}},? \d{{4}}|(?:{MONTHS}) \d{{4}}"
                   rf"|(?:1\d{{3}}|20\d{{2}})s?)\b")
_UNITS = "metres|meters|km|kilometres|miles|feet|percent|per cent|kg|tonnes|years|people|million|billion"
_NUMBER = re.compile(rf"(?<![\w.])\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?(?: (?:{_UNITS}))?\b"
                     rf"|(?<![\w.])\d+(?:\.\d+)?(?: (?:{_UNITS}))?\b")
_CAP = r"[A-Z][\w'’\-]*"
_ENTITY = re.compile(rf"\b{_CAP}(?:(?: (?:of|de|van|von|the|and|da|del|la))* {_CAP})*(?: \d+\b)?")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*)$")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    text: str


def salient_spans(text: str) -> list[Span]:
    found: list[Span] = []
    for kind, pattern in (("date", _DATE), ("number", _NUMBER), ("entity", _ENTITY)):
        for m in pattern.finditer(text):
            s, e = m.start(), m.end()
            if kind == "entity":
                words = m.group().split()
                if len(words) == 1 and _SENTENCE_START.search(text[:s]):
                    continue  # "The", "It", "Objects" at a sentence start
                if words[0] in ("The", "A", "An", "In", "On", "It", "This") and len(words) > 1:
                    s += len(words[0]) + 1  # a capitalised article is not part of the name
            found.append(Span(s, e, kind, text[s:e]))
    found.sort(key=lambda sp: (sp.start, -(sp.end - sp.start)))
    out: list[Span] = []
    for sp in found:
        if out and sp.start < out[-1].end:
            continue
        out.append(sp)
    return out


def mask_spans(tokens_text: str, spans: list[Span], mask: str = "[MASK]") -> str:
    """The text with every span replaced by `mask` (masked salient spans, at the word level)."""
    out, last = [], 0
    for sp in spans:
        out.append(tokens_text[last:sp.start])
        out.append(mask)
        last = sp.end
    out.append(tokens_text[last:])
    return "".join(out)
