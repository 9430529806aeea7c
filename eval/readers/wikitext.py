"""WikiText-103 ``wiki.test.tokens`` (Merity et al. 2016): raw word-level text split into articles.

The file is UTF-8 text, one paragraph per line, tokens separated by single spaces, numbers
escaped as `` @-@ `` / `` @,@ `` / `` @.@ ``, and headings written `` = Title = `` (an article),
`` = = Section = = `` and deeper. Megatron-LM scores the whole file as one text; the articles are
also offered for document-level evaluation. ``wikitext_detokenize`` is Megatron-LM's
``tasks/zeroshot_gpt/detokenizer.py`` ``wikitext_detokenizer`` rule set.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, read_text, split_lines

_ARTICLE_HEADING = re.compile(r"^ = ([^=].*?) = $")


@dataclass
class WikitextArticle:
    """One article: its title and its raw lines (heading included), newlines kept."""

    title: str
    text: str


def read_wikitext(path: str | os.PathLike) -> list[WikitextArticle]:
    """The articles of a WikiText file, in order; ``"".join(a.text for a in ...)`` is the file.

    Lines before the first article heading (the file's leading blank line) join the first article.
    """
    what = "WikiText-103 raw tokens with ' = Title = ' article headings"
    raw = read_text(path, what)
    articles: list[WikitextArticle] = []
    pending = ""
    for number, line in enumerate(split_lines(raw), start=1):
        match = _ARTICLE_HEADING.match(line.rstrip("\r\n"))
        if match:
            articles.append(WikitextArticle(title=match.group(1), text=pending + line))
            pending = ""
        elif articles:
            articles[-1].text += line
        elif line.strip():  # text before any heading: not the WikiText layout
            raise ReaderError(path, number, f"text before the first article heading; expected {what}")
        else:
            pending += line
    if not articles:
        raise ReaderError(path, 1, f"no article heading found; expected {what}")
    return articles


def wikitext_detokenize(text: str) -> str:
    """Megatron-LM's ``wikitext_detokenizer``: undo WikiText's spacing and number escapes."""
    # contractions
    text = text.replace("s '", "s'")
    text = re.sub(r"/' [0-9]/", r"/'[0-9]/", text)
    # number separators
    for escaped, plain in ((" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", ".")):
        text = text.replace(escaped, plain)
    # punctuation
    for mark in (":", ";", ".", "!", "?", ","):
        text = text.replace(f" {mark} ", f"{mark} ")
    # brackets and quotes: drop the spaces just inside them
    text = re.sub(r"\(\s*([^\)]*?)\s*\)", r"(\1)", text)
    text = re.sub(r"\[\s*([^\]]*?)\s*\]", r"[\1]", text)
    text = re.sub(r"{\s*([^}]*?)\s*}", r"{\1}", text)
    text = re.sub(r"\"\s*([^\"]*?)\s*\"", r'"\1"', text)
    text = re.sub(r"'\s*([^']*?)\s*'", r"'\1'", text)
    # headings, degrees, line edges
    text = text.replace("= = = =", "====").replace("= = =", "===").replace("= =", "==")
    text = text.replace(" \N{DEGREE SIGN} ", "\N{DEGREE SIGN}")
    text = text.replace(" \n", "\n").replace("\n ", "\n")
    text = text.replace(" N ", " 1 ")
    text = text.replace(" 's", "'s")
    return text
