"""Keywords of a sentence, the training targets of the keyword predictor and the generator's control.

The paper extracts them from each gold sentence with RAKE (Rose et al. 2010), the default here
(`rake`, PyPI `rake-nltk`): the sentence is cut into candidate phrases at stop words and
punctuation, each word scores degree/frequency in the phrase co-occurrence graph and a phrase the
sum of its words' scores. rake-nltk's defaults need nltk's downloadable data (the stopwords corpus,
punkt), so everything is passed in: the stop words are scikit-learn's ENGLISH_STOP_WORDS plus
megazoo's function words and story fillers (was, felt, wanted, finally, ...), the sentence is one
sentence, and words are runs of letters (with inner apostrophes); any other token (a digit, a
punctuation mark, "didn't") ends a phrase like a stop word.

Keywords are single words, because the knowledge base, the WordNet antonyms of -ANT and the control
rate work per word: the ranked phrases are read best first (ties: the earlier phrase first), each
from its last word, which heads an English phrase ("a long road trip" gives trip, road, long).
`yake` (PyPI `yake`, Campos et al. 2020) stays an option: YAKE!'s one-word keywords, lower score
first. Either way keywords are lowercased, at least 3 letters, never a name placeholder or a
function word, most relevant first.
"""

from __future__ import annotations

import re
from functools import lru_cache

from megazoo.tasks.story.delex import FUNCTION_WORDS, PLACEHOLDER

MAX_KEYWORDS = 2
EXTRACTORS = ("rake", "yake")
DEFAULT_EXTRACTOR = "rake"  # the paper's
EXTRA_STOP = frozenset("""was were is are be been being had has have did do does got get went go could would should
can will just very really too also then still so because felt wanted luckily finally sadly unfortunately
planned hoped""".split())
TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*|\S")
BREAK = ","  # what every token that is not a plain word becomes: a phrase boundary for RAKE


def check_extractor(name: str, key: str = "keyword extractor") -> str:
    """`name` if it is a known extractor, else a one-line ValueError naming `key` and the choices."""
    if name not in EXTRACTORS:
        raise ValueError(f"{key}={name!r}: choose one of {', '.join(EXTRACTORS)} (rake is the paper's)")
    return name


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) | FUNCTION_WORDS | EXTRA_STOP


def _words(sentence: str) -> list[str]:
    """rake-nltk's word tokenizer: letters-only tokens kept, every other token a phrase break."""
    return [t if t.isalpha() else BREAK for t in TOKEN.findall(sentence)]


@lru_cache(maxsize=1)
def _rake():
    from rake_nltk import Rake

    return Rake(stopwords=set(stop_words()), punctuations={BREAK}, sentence_tokenizer=lambda text: [text],
                word_tokenizer=_words)


@lru_cache(maxsize=4)
def _yake(top: int):
    import yake

    return yake.KeywordExtractor(lan="en", n=1, top=top, dedupLim=0.9)


def _rake_words(text: str) -> list[str]:
    """Words of RAKE's phrases, best phrase first (ties in the sentence's order), each from its last word."""
    rake = _rake()
    rake.extract_keywords_from_text(text)
    position = {}
    for i, w in enumerate(t.lower() for t in _words(text)):
        position.setdefault(w, i)
    # rake-nltk sorts (score, phrase) pairs descending, so equal scores come out in reverse alphabetical
    # order; re-sort on the score and the phrase's place in the sentence instead
    ranked = sorted(rake.get_ranked_phrases_with_scores(), key=lambda sp: (-sp[0], position[sp[1].split()[0]]))
    return [w for _score, phrase in ranked for w in reversed(phrase.split())]


def _yake_words(text: str, k: int) -> list[str]:
    return [word.lower() for word, _score in _yake(k + 6).extract_keywords(text)]


def extract_keywords(sentence: str, k: int = MAX_KEYWORDS, extractor: str = DEFAULT_EXTRACTOR) -> list[str]:
    """Up to `k` keywords of one sentence, most relevant first, by `extractor` (rake | yake)."""
    check_extractor(extractor)
    text = PLACEHOLDER.sub(" ", sentence)
    in_sentence = set(re.findall(r"[a-z']+", text.lower()))
    ranked = _rake_words(text) if extractor == "rake" else _yake_words(text, k)
    out: list[str] = []
    for w in ranked:
        if (w in out or w in FUNCTION_WORDS or w in EXTRA_STOP or not w.isalpha() or len(w) < 3
                or w not in in_sentence):
            continue
        out.append(w)
    return out[:k]


def story_keywords(sentences: list[str], k: int = MAX_KEYWORDS,
                   extractor: str = DEFAULT_EXTRACTOR) -> list[list[str]]:
    return [extract_keywords(s, k, extractor) for s in sentences]


def format_keywords(words: list[str]) -> str:
    return ", ".join(words) if words else "none"


def parse_keywords(text: str, k: int = 4) -> list[str]:
    """The keyword predictor's output `a, b` -> ["a", "b"] (lowercased, at most k, 'none' -> [])."""
    words = [w.strip().lower() for w in text.split("\n")[0].split(",")]
    words = [w for w in words if w and w != "none" and re.fullmatch(r"[a-z][a-z' -]*", w)]
    return list(dict.fromkeys(words))[:k]
