"""Heuristic document filters: the Gopher rules (Rae et al. 2021, appendix A: "quality filtering"),
C4's (Raffel et al. 2020) and language identification, as MT-NLG applied them to Common Crawl.

Each rule has its documented threshold below; set a rule's value to null (YAML) or `none` (--set) to
turn it off. A document fails at the first rule it breaks, and that rule is its removal reason.

| rule | default | removes a document when |
| `min_words`, `max_words` | 50, 100000 | it has fewer / more whitespace words (Gopher) |
| `min_mean_word_length`, `max_mean_word_length` | 3, 10 | the mean word length (characters) is outside (Gopher) |
| `max_symbol_ratio` | 0.1 | (`#` + `...` + `…`) per word is above (Gopher) |
| `max_bullet_lines` | 0.9 | this share of lines start with a bullet (Gopher) |
| `max_ellipsis_lines` | 0.3 | this share of lines end in an ellipsis (Gopher) |
| `min_alpha_words` | 0.8 | fewer words contain a letter (Gopher) |
| `min_stop_words` | 2 | fewer of the stop words the/be/to/of/and/that/have/with occur (Gopher) |
| `max_duplicate_lines` | 0.3 | this share of lines repeat an earlier line (Gopher) |
| `max_duplicate_line_chars` | 0.2 | repeated lines hold this share of characters (Gopher) |
| `max_top_ngram` | {2: 0.2, 3: 0.18, 4: 0.16} | the most frequent n-gram covers this share of characters (Gopher) |
| `max_duplicate_ngrams` | {5: 0.15, ..., 10: 0.1} | repeated n-grams cover this share of characters (Gopher) |
| `bad_phrases` | [lorem ipsum] | it contains one of these phrases, lowercased (C4) |
| `languages`, `min_language_score` | [en], 0.65 | py3langid's language is not listed or its confidence is lower |
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, fields

from megazoo.curate.errors import CurateError

STOP_WORDS = frozenset(("the", "be", "to", "of", "and", "that", "have", "with"))
BULLETS = ("*", "-", "•", "‣", "◦", "⁃", "⁌", "⁍", "∙", "○", "●", "◘", "◦", "⦾", "⦿")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass
class FilterConfig:
    min_words: int | None = 50
    max_words: int | None = 100000
    min_mean_word_length: float | None = 3
    max_mean_word_length: float | None = 10
    max_symbol_ratio: float | None = 0.1
    max_bullet_lines: float | None = 0.9
    max_ellipsis_lines: float | None = 0.3
    min_alpha_words: float | None = 0.8
    min_stop_words: int | None = 2
    max_duplicate_lines: float | None = 0.3
    max_duplicate_line_chars: float | None = 0.2
    max_top_ngram: dict | None = field(default_factory=lambda: {2: 0.2, 3: 0.18, 4: 0.16})
    max_duplicate_ngrams: dict | None = field(
        default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10})
    bad_phrases: list | None = field(default_factory=lambda: ["lorem ipsum"])
    languages: list | None = field(default_factory=lambda: ["en"])
    min_language_score: float = 0.65

    @classmethod
    def from_dict(cls, values: dict | None, where: str = "filter") -> "FilterConfig":
        from megazoo.curate.settings import number, unknown_key

        values = dict(values or {})
        known = {f.name for f in fields(cls)}
        for key in values:
            if key not in known:
                raise unknown_key(where, key, known, "filter setting")
        config = cls(**values)
        for name in ("max_top_ngram", "max_duplicate_ngrams"):
            table = getattr(config, name)
            if table is not None:
                if not isinstance(table, dict) or not all(_is_number(v) and _is_number(n) for n, v in table.items()):
                    raise CurateError(f"{where}.{name}: expected a mapping n: share (e.g. {{2: 0.2}}), got {table!r}")
                setattr(config, name, {number(f"{where}.{name} n-gram size", n, 1, 100, whole=True):
                                       number(f"{where}.{name}.{n}", v, 0, 1) for n, v in table.items()})
        if isinstance(config.languages, str):
            config.languages = [config.languages]
        for name in ("languages", "bad_phrases"):
            value = getattr(config, name)
            if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise CurateError(f"{where}.{name}: expected a list of strings or null, got {value!r}")
        for f in fields(cls):
            if f.name not in BOUNDS:
                continue
            value = getattr(config, f.name)
            if value is None and f.name != "min_language_score":
                continue
            lo, hi, whole = BOUNDS[f.name]
            if not _is_number(value):
                null = " or null" if f.name != "min_language_score" else ""
                raise CurateError(f"{where}.{f.name}: expected a number{null}, got {value!r}")
            setattr(config, f.name, number(f"{where}.{f.name}", value, lo, hi, whole=whole))
        return config


# (lowest, highest, whole number) of each numeric rule: shares are in [0, 1]; counts and lengths
# have generous upper bounds far beyond real documents
BOUNDS = {"min_words": (0, 10**9, True), "max_words": (0, 10**9, True),
          "min_mean_word_length": (0, 10**6, False), "max_mean_word_length": (0, 10**6, False),
          "max_symbol_ratio": (0, 10**6, False), "max_bullet_lines": (0, 1, False),
          "max_ellipsis_lines": (0, 1, False), "min_alpha_words": (0, 1, False), "min_stop_words": (0, 8, True),
          "max_duplicate_lines": (0, 1, False), "max_duplicate_line_chars": (0, 1, False),
          "min_language_score": (0, 1, False)}


def _is_number(value) -> bool:
    """A finite int or float (not a bool, NaN or infinity)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _ngram_shares(words: list[str], n: int, chars: int) -> tuple[float, float]:
    """(share of characters in the most frequent n-gram's occurrences, share in repeated n-grams)."""
    if len(words) < n or chars == 0:
        return 0.0, 0.0
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    counts = Counter(grams)
    top, top_count = counts.most_common(1)[0]
    top_share = (sum(map(len, top)) * top_count) / chars if top_count > 1 else 0.0
    covered = [False] * len(words)
    for i, gram in enumerate(grams):
        if counts[gram] > 1:
            for j in range(i, i + n):
                covered[j] = True
    dup_share = sum(len(w) for w, c in zip(words, covered) if c) / chars
    return top_share, dup_share


def filter_reason(text: str, config: FilterConfig) -> str | None:
    """The first rule a document breaks (as its removal reason), or None when it passes all."""
    c = config
    words = text.split()
    n = len(words)
    if c.min_words is not None and n < c.min_words:
        return f"min_words: {n} words < {c.min_words}"
    if c.max_words is not None and n > c.max_words:
        return f"max_words: {n} words > {c.max_words}"
    mean = sum(map(len, words)) / max(n, 1)
    if c.min_mean_word_length is not None and mean < c.min_mean_word_length:
        return f"min_mean_word_length: {mean:.1f} < {c.min_mean_word_length}"
    if c.max_mean_word_length is not None and mean > c.max_mean_word_length:
        return f"max_mean_word_length: {mean:.1f} > {c.max_mean_word_length}"
    if c.max_symbol_ratio is not None:
        symbols = text.count("#") + text.count("...") + text.count("…")
        if symbols / max(n, 1) > c.max_symbol_ratio:
            return f"max_symbol_ratio: {symbols / max(n, 1):.2f} > {c.max_symbol_ratio}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and c.max_bullet_lines is not None:
        share = sum(line.startswith(BULLETS) for line in lines) / len(lines)
        if share > c.max_bullet_lines:
            return f"max_bullet_lines: {share:.2f} > {c.max_bullet_lines}"
    if lines and c.max_ellipsis_lines is not None:
        share = sum(line.endswith(("...", "…")) for line in lines) / len(lines)
        if share > c.max_ellipsis_lines:
            return f"max_ellipsis_lines: {share:.2f} > {c.max_ellipsis_lines}"
    if c.min_alpha_words is not None:
        share = sum(any(ch.isalpha() for ch in w) for w in words) / max(n, 1)
        if share < c.min_alpha_words:
            return f"min_alpha_words: {share:.2f} < {c.min_alpha_words}"
    lowered = [w.lower() for w in _WORD.findall(text)]
    if c.min_stop_words is not None:
        present = len(STOP_WORDS.intersection(lowered))
        if present < c.min_stop_words:
            return f"min_stop_words: {present} stop words < {c.min_stop_words}"
    if len(lines) > 1 and (c.max_duplicate_lines is not None or c.max_duplicate_line_chars is not None):
        seen, dup_lines, dup_chars = set(), 0, 0
        for line in lines:
            if line in seen:
                dup_lines += 1
                dup_chars += len(line)
            seen.add(line)
        if c.max_duplicate_lines is not None and dup_lines / len(lines) > c.max_duplicate_lines:
            return f"max_duplicate_lines: {dup_lines / len(lines):.2f} > {c.max_duplicate_lines}"
        total = sum(map(len, lines))
        if c.max_duplicate_line_chars is not None and dup_chars / max(total, 1) > c.max_duplicate_line_chars:
            return f"max_duplicate_line_chars: {dup_chars / max(total, 1):.2f} > {c.max_duplicate_line_chars}"
    chars = sum(map(len, lowered))
    for size, limit in sorted((c.max_top_ngram or {}).items()):
        top, _ = _ngram_shares(lowered, size, chars)
        if top > limit:
            return f"max_top_ngram: the top {size}-gram covers {top:.2f} > {limit}"
    for size, limit in sorted((c.max_duplicate_ngrams or {}).items()):
        _, dup = _ngram_shares(lowered, size, chars)
        if dup > limit:
            return f"max_duplicate_ngrams: repeated {size}-grams cover {dup:.2f} > {limit}"
    if c.bad_phrases:
        low = text.lower()
        for phrase in c.bad_phrases:
            if phrase.lower() in low:
                return f"bad_phrases: contains {phrase!r}"
    if c.languages:
        from megazoo.curate.langid import language_reason

        reason = language_reason(text, list(c.languages), c.min_language_score)
        if reason:
            return f"languages: {reason}"
    return None


def filter_shard(docs: list[dict], params: dict) -> tuple[list[dict], list[dict], dict]:
    """The filter stage on one shard: (kept, removed records, extra stats)."""
    config = FilterConfig.from_dict(params.get("config"))
    key = params["text_key"]
    kept, removed = [], []
    for doc in docs:
        reason = filter_reason(doc[key], config)
        if reason is None:
            kept.append(doc)
        else:
            removed.append({"id": doc["id"], "stage": "filter", "reason": reason})
    return kept, removed, {}
