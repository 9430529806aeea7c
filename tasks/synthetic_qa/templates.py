"""Template questions about a paragraph: the bootstrap data of the pipeline (no human QA set
exists offline). Each rule reads one sentence and turns a span of it into a wh-question whose
answer is that span, character offsets kept, so the result is a SQuAD training set:

    quoted subject   The "nonlocal" statement causes ...       Which statement causes ...?      "nonlocal"
    verb subject     This module provides socket operations.   What does this module provide?   socket operations
    when             The interpreter raises X when it fails.   When does the interpreter raise X?  when it fails
    modal            The function should accept no arguments.  What should the function accept?  no arguments
    how              A program can raise it with "raise".      How can a program raise it?      with "raise"
    copula           A scope is the visibility of a name.      What is a scope?                 the visibility of a name
    passive          The hook is called by the debugger.       What is the hook called by?      the debugger
    return           Return "True" if s starts with p.         What is returned if s starts with p?  "True"
    acronym          IP (Internet Protocol)                    What does IP stand for?          Internet Protocol
    version          Changed in version 3.8: ...               In which version was this changed?  3.8
    quoted object    Division by zero raises the "X" error.    Division by zero raises which error?  "X"

The questions are stiff (they are templates); they teach the extractor what a good answer span
looks like and the question generator the (context, answer) -> question mapping, which the
pretrained decoder then phrases by sampling.
"""

from __future__ import annotations

import re

VERBS = ("provides", "returns", "defines", "raises", "creates", "contains", "supports", "implements", "allows",
         "specifies", "causes", "accepts", "represents", "includes", "uses", "takes", "calls", "sets", "reads",
         "writes", "stores", "holds", "gives", "makes", "requires", "produces", "converts", "generates", "describes",
         "determines", "controls", "indicates", "means", "handles", "encodes", "decodes", "sends", "receives",
         "checks", "compares", "overrides", "ignores", "prints", "opens", "adds", "removes", "changes", "has",
         "does", "affects", "replaces", "matches", "passes", "keeps", "lists", "shows", "selects", "enables")
MODALS = ("can", "may", "must", "should", "will", "cannot", "might", "would")
NAME = r'(?:"[^"]{1,40}"|[A-Za-z_][\w.]*\(\)|[A-Z][a-z]*[A-Z_.][\w.]*)'
SUBJECT = (r"((?:(?:The|A|An|This|Each|Every|Its|These|Such|Any) (?:[\w\"().'-]+ ){0,3}[\w\"().'-]+)|(?:" + NAME
           + r"(?: [a-z]+){0,2}))")
QUOTED_SUBJECT = re.compile(r'^(?:The |A |An )?("[^"]{1,40}") ([a-z]+) ((?:is|are|can|may|must|should|will|does|'
                            r'causes|returns|raises|defines|provides|allows|creates|statement|function|method)\b.*)$')
VERB_SUBJECT = re.compile(r"^" + SUBJECT + r" (?:(?:also|only|always|usually|then|now) )?(" + "|".join(VERBS)
                          + r") (.+?)[.]?$")
MODAL = re.compile(r"^" + SUBJECT + r" (" + "|".join(MODALS) + r") (?:(?:also|only|always|usually|explicitly|not) )?"
                   r"(be [a-z]+ed|[a-z]+) (.+?)[.]?$")
COPULA = re.compile(r"^" + SUBJECT + r" (is|are) (.+?)[.]?$")
PASSIVE = re.compile(r"^" + SUBJECT + r" (is|are) ((?:[a-z]+ )?[a-z]+ed) (by|when|if|with) (.+?)[.]?$")
RETURN = re.compile(r"^Returns? (.+?) (if|when) (.+?)(?:[,;]|, otherwise|$)")
ACRONYM = re.compile(r"\b([A-Z][a-z]+(?: [A-Z]?[a-z]+){1,4}) \(([A-Z]{2,6})\)|\b([A-Z]{2,6}) \(([A-Z][a-z]+(?: [A-Z]?[a-z]+){1,4})\)")
VERSION = re.compile(r"\b(Changed|New|Deprecated|Added) in version (\d+\.\d+)")
QUOTED = re.compile(r'(?:\b(the|a|an) )?("[^"]{1,40}")')
CUT = re.compile(r"[,;:(]| which | that | when | if | where | so | because | unless | otherwise ")
SPLIT = re.compile(r" (when|by|with|using) ")
IRREGULAR = {"has": "have", "does": "do"}
VERSION_VERBS = {"Changed": "changed", "New": "added", "Added": "added", "Deprecated": "deprecated"}


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
    return " ".join(parts[:words]).rstrip(".") if parts else ""


def _lower_first(text: str) -> str:
    """`The scope` -> `the scope`; names (`OpenerDirector`, `IDLE`, quoted) stay as written."""
    word = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if word[:1].isupper() and word[1:] == word[1:].lower() else text


def base_form(verb: str) -> str:
    """`provides` -> `provide`, `specifies` -> `specify`, `matches` -> `match`, `has` -> `have`."""
    if verb in IRREGULAR:
        return IRREGULAR[verb]
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if re.search(r"(ss|sh|ch|x|z)es$", verb):
        return verb[:-2]
    return verb[:-1]


def _verb_questions(s: str) -> list[tuple[str, str, int]]:
    out = []
    m = VERB_SUBJECT.match(s)
    if m:
        subj, verb, rest = _lower_first(m.group(1)), base_form(m.group(2)), m.group(3)
        answer = _short(rest)
        when = re.search(r" (when) ", rest)
        if answer and len(answer) < 80 and len(answer.split()) <= 8:
            out.append((f"What does {subj} {verb}?", answer, m.start(3)))
        if when and when.start() > 0 and " " in rest[when.end():]:
            answer = _short(rest[when.start() + 1:].split(" ", 1)[0] + " " + rest[when.end():], 12)
            obj = rest[:when.start()]
            out.append((f"{when.group(1).capitalize()} does {subj} {verb} {obj}?", answer,
                        m.start(3) + when.start() + 1))
    m = MODAL.match(s)
    if m and not m.group(3).startswith("be "):
        subj, modal, verb, rest = _lower_first(m.group(1)), m.group(2), m.group(3), m.group(4)
        how = SPLIT.search(rest)
        if how and how.group(1) != "when" and how.start() > 0:
            answer = _short(rest[how.start() + 1:], 8)
            out.append((f"How {modal} {subj} {verb} {rest[:how.start()]}?", answer, m.start(4) + how.start() + 1))
        answer = _short(rest[:how.start()] if how and how.start() > 0 else rest, 8)
        if answer and not answer.startswith(("be ", "to ", "not ")):
            out.append((f"What {modal} {subj} {verb}?", answer, m.start(4)))
    return out


def _be_questions(s: str) -> list[tuple[str, str, int]]:
    out = []
    m = PASSIVE.match(s)
    if m:
        subj, be, part, prep, rest = _lower_first(m.group(1)), m.group(2), m.group(3), m.group(4), m.group(5)
        if prep == "by":
            answer = _short(rest, 8)
            if answer:
                out.append((f"What {be} {subj} {part} by?", answer, m.start(5)))
        elif prep in ("when", "if"):
            answer = _short(f"{prep} {rest}", 12) if " " in rest else ""
            if answer:
                out.append((f"When {be} {subj} {part}?", answer, m.start(4)))
        return out
    m = COPULA.match(s)
    if m and re.match(r"(?:a|an|the|one|two) ", m.group(3)):  # a definition, not a passive
        answer = _short(m.group(3))
        if answer and len(answer.split()) >= 2:
            out.append((f"What {m.group(2)} {_lower_first(m.group(1))}?", answer, m.start(3)))
    return out


def _marked_questions(s: str) -> list[tuple[str, str, int]]:
    out = []
    m = RETURN.match(s)
    if m and len(m.group(1).split()) <= 8:
        cond = _short(m.group(3), 12)
        if cond:
            out.append((f"What is returned {m.group(2)} {cond}?", m.group(1), m.start(1)))
    for m in ACRONYM.finditer(s):
        if m.group(1):
            out.append((f"What does {m.group(2)} stand for?", m.group(1), m.start(1)))
        else:
            out.append((f"What does {m.group(3)} stand for?", m.group(4), m.start(4)))
        break
    m = VERSION.search(s)
    if m:
        out.append((f"In which version was this {VERSION_VERBS[m.group(1)]}?", m.group(2), m.start(2)))
    return out


def sentence_questions(sentence: str) -> list[tuple[str, str, int]]:
    """(question, answer, answer offset in the sentence) pairs the rules find in one sentence."""
    out = []
    s = sentence.rstrip()
    m = QUOTED_SUBJECT.match(s)
    if m:
        rest = m.group(3).rstrip(".")
        out.append((f"Which {m.group(2)} {rest}?", m.group(1), m.start(1)))
    out += _marked_questions(s) + _verb_questions(s) + _be_questions(s)
    for q in QUOTED.finditer(s):
        if q.start(2) < 3:
            continue
        before, after = s[:q.start()].rstrip(), s[q.end():].rstrip(" .")
        wh = "which" if q.group(1) else "what"
        if 2 <= len(before.split()) <= 14 and len(after.split()) <= 10:
            out.append((f"{before} {wh}{after}?".replace(" ,", ","), q.group(2), q.start(2)))
        break
    return out


def paragraph_questions(context: str, limit: int = 6) -> list[tuple[str, str, int]]:
    """Up to `limit` (question, answer, answer_start) of a paragraph, at most three per sentence,
    one per answer span."""
    out, spans = [], set()
    for offset, sent in sentences(context):
        for question, answer, start in sentence_questions(sent)[:3]:
            start += offset
            answer = answer.strip()
            if (context[start:start + len(answer)] == answer and answer and len(question) < 200
                    and (start, answer) not in spans):
                spans.add((start, answer))
                out.append((question[:1].upper() + question[1:], answer, start))
    return out[:limit]
