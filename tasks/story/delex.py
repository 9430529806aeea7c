"""The paper's delexicalisation of person names: `[MALE]`, `[FEMALE]`, `[NEUTRAL]`, reversible.

Names come from gender-guesser's name list (offline, PyPI `gender-guesser`): male and mostly_male
give [MALE], female and mostly_female [FEMALE], andy (either) [NEUTRAL]. A capitalised word is a name
when the list knows it and it is not a function word ("The", "He", "His" are in the list); a word at
the start of a sentence that is also an English verb, adjective or adverb ("Will", "Rose", "Bill")
counts only when the story uses it capitalised inside a sentence too. In the (title-cased) title only
the names found in the sentences are replaced. The replaced names are kept in order, so
`relexicalise` gives the original text back exactly, and generated sentences get the story's names.
"""

from __future__ import annotations

import re
from functools import lru_cache

from megazoo.tasks.story.data import Story

PLACEHOLDERS = {"male": "[MALE]", "mostly_male": "[MALE]", "female": "[FEMALE]", "mostly_female": "[FEMALE]",
                "andy": "[NEUTRAL]"}
TOKENS = ("[MALE]", "[FEMALE]", "[NEUTRAL]")
FUNCTION_WORDS = frozenset("""a an the he she it they we i you me him her his hers its our their them us my your
this that these those one two three some any all each every no not and or but so if then when while after before
at in on of to for from with by as up down out over under again once here there why how what who whom which
today tomorrow yesterday later soon finally eventually suddenly last next first mom dad""".split())
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
PLACEHOLDER = re.compile(r"\[(?:MALE|FEMALE|NEUTRAL)\]")


@lru_cache(maxsize=1)
def _detector():
    import gender_guesser.detector as gender

    return gender.Detector(case_sensitive=False)


@lru_cache(maxsize=65536)
def name_kind(word: str) -> str | None:
    """The placeholder of a capitalised word, or None when it is no name."""
    if not word[:1].isupper() or word.lower() in FUNCTION_WORDS:
        return None
    return PLACEHOLDERS.get(_detector().get_gender(word))


@lru_cache(maxsize=1)
def _english():
    from megazoo.eval.metrics.wordnet import load_wordnet

    return load_wordnet()


def _is_word(word: str) -> bool:
    """A verb, adjective or adverb in WordNet ("Will", "Mark", "Rose"): ambiguous at a sentence start."""
    w = word.lower()
    return any(s.pos() != "n" and any(lemma.name() == w for lemma in s.lemmas()) for s in _english().synsets(w))


def _sentence_starts(text: str) -> set[int]:
    return {0} | {m.end() for m in re.finditer(r"[.!?]\s+", text)}


def delexicalise(story: Story) -> Story:
    """The story with person names replaced by placeholders; `names` records them in order."""
    inside = {m.group() for s in story.sentences for m in WORD.finditer(s)
              if m.start() not in _sentence_starts(s) and name_kind(m.group())}
    names: list[tuple[str, str]] = []

    def replace(text: str, title: bool = False) -> str:
        starts = _sentence_starts(text)

        def sub(m):
            word = m.group()
            kind = name_kind(word)
            if kind is None or (title and word not in found) or (
                    not title and m.start() in starts and word not in inside and _is_word(word)):
                return word
            names.append((kind, word))
            return kind
        return WORD.sub(sub, text)

    sentences = [replace(s) for s in story.sentences]
    found = {n for _, n in names}
    body, names[:] = names[:], []
    title = replace(story.title, title=True)
    return Story(story.id, title, sentences, names + body)


def relexicalise(text: str, names: list[tuple[str, str]], offset: int = 0) -> tuple[str, int]:
    """(text with its placeholders filled, placeholders used): the i-th placeholder from
    names[offset + i] when that has the same kind, else the story's first name of that kind (a
    generated sentence), else the placeholder stays. Filling the title, then each sentence with the
    running offset, restores a delexicalised story exactly."""
    used = 0

    def sub(m):
        nonlocal used
        kind = m.group()
        i = offset + used
        used += 1
        if i < len(names) and names[i][0] == kind:
            return names[i][1]
        return next((n for k, n in names if k == kind), kind)
    return PLACEHOLDER.sub(sub, text), used


def relexicalise_story(story: Story) -> Story:
    """The original story of a delexicalised one."""
    title, used = relexicalise(story.title, story.names)
    sentences = []
    for s in story.sentences:
        text, n = relexicalise(s, story.names, used)
        used += n
        sentences.append(text)
    return Story(story.id, title, sentences, [])
