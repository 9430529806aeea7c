"""Template questions about a paragraph: the bootstrap data of the pipeline (no human QA set
exists offline). Each rule reads one sentence and turns a span of it into a wh-question whose
answer is that span, character offsets kept, so the result is a SQuAD training set:

    quoted subject   The "nonlocal" statement causes ...       Which statement causes ...?      "nonlocal"
    verb subject     This module provides socket operations.   What does this module provide?   socket operations
    copula           A scope is the visibility of a name.      What is a scope?                 the visibility of a name
    quoted object    Division by zero raises the "X" error.    Division by zero raises which error?  "X"

The questions are stiff (they are templates); they teach the extractor what a good answer span
looks like and the question generator the (context, answer) -> question mapping, which the
pretrained decoder then phrases by sampling.
"""

from __future__ import annotations

import re

QUOTED_SUBJECT = re.compile(r'^(?:The |A |An )?("[^"]{1,40}") ([a-z]+) ((?:is|are|can|may|must|should|will|does|'
                            r'causes|returns|raises|defines|provides|allows|creates|statement|function|method)\b.*)$')
VERBS = ("provides", "returns", "defines", "raises", "creates", "contains", "supports", "implements", "allows",
         "specifies", "causes", "accepts", "represents", "includes")
VERB_SUBJECT = re.compile(r"^((?:This|The|A|An|Each|Every) (?:[A-Za-z_]+ ){0,2}[A-Za-z_]+) (" + "|".join(VERBS)
                          + r") (.+?)[.]?$")
COPULA = re.compile(r"^((?:The|A|An|This) (?:[A-Za-z_\"]+ ){0,2}[A-Za-z_\"]+) (is|are) (.+?)[.]?$")
QUOTED = re.compile(r'(?:\b(the|a|an) )?("[^"]{1,40}")')
CUT = re.compile(r"[,;:(]| which | that | when | if | where ")


def sentences(text: str) -> list[tuple[int, str]]:
    """(offset, sentence) of each sentence of `text` (split after . ! ? before a capital or a quote)."""
    out = []
    for m in re.finditer(r"\S.*?(?:[.!?](?=\s+[A-Z\"(])|$)", text):
        out.append((m.start(), m.group(0)))
    return out


def _short(span: str, words: int = 10) -> str:
    cut = CUT.search(span)
    span = span[:cut.start()] if cut else span
    parts = span.split()
    return " ".join(parts[:words]) if parts else ""


def _lower_first(text: str) -> str:
    """`The scope` -> `the scope`; names (`OpenerDirector`, `IDLE`, quoted) stay as written."""
    word = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if word[:1].isupper() and word[1:] == word[1:].lower() else text


def sentence_questions(sentence: str) -> list[tuple[str, str, int]]:
    """(question, answer, answer offset in the sentence) pairs the rules find in one sentence."""
    out = []
    s = sentence.rstrip()
    m = QUOTED_SUBJECT.match(s)
    if m:
        rest = m.group(3).rstrip(".")
        out.append((f"Which {m.group(2)} {rest}?", m.group(1), m.start(1)))
    m = VERB_SUBJECT.match(s)
    if m:
        answer = _short(m.group(3))
        if answer and len(answer) < 80:
            verb = m.group(2)[:-2] if m.group(2).endswith("es") and m.group(2)[-3] in "sx" else m.group(2)[:-1]
            out.append((f"What does {_lower_first(m.group(1))} {verb}?", answer, m.start(3)))
    m = COPULA.match(s)
    if m and re.match(r"(?:a|an|the|one|two|used|not) ", m.group(3)):  # a definition, not a passive verb
        answer = _short(m.group(3))
        if answer and len(answer.split()) >= 2:
            out.append((f"What {m.group(2)} {_lower_first(m.group(1))}?", answer, m.start(3)))
    for q in QUOTED.finditer(s):
        if q.start(2) < 3:
            continue
        before, after = s[:q.start()].rstrip(), s[q.end():].rstrip(" .")
        wh = "which" if q.group(1) else "what"
        if 2 <= len(before.split()) <= 14 and len(after.split()) <= 10:
            out.append((f"{before} {wh}{after}?".replace(" ,", ","), q.group(2), q.start(2)))
        break
    return out


def paragraph_questions(context: str, limit: int = 4) -> list[tuple[str, str, int]]:
    """Up to `limit` (question, answer, answer_start) of a paragraph, at most two per sentence."""
    out = []
    for offset, sent in sentences(context):
        for question, answer, start in sentence_questions(sent)[:2]:
            start += offset
            if context[start:start + len(answer)] == answer and len(question) < 200:
                out.append((question[:1].upper() + question[1:], answer, start))
    return out[:limit]
