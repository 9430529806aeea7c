"""The retrieval reader's exact match and F1 (tasks/retrieval/reader/evaluate.py) are SQuAD v1.1's:
whitespace is collapsed, never removed ("new york" is not "newyork"), and on 500 seeded random
(prediction, gold list) pairs they equal the official evaluate-v1.1.py, restated in
tests/squad_reference.py (the port the other SQuAD tests use). The answer scored is the passage's
own characters, so wordpiece decoding ("1, 000", stripped accents) cannot change a score."""

import random

import pytest

from megazoo.tasks.retrieval.inputs import Row
from megazoo.tasks.retrieval.reader.evaluate import answer_scores, answer_text
from megazoo.tasks.retrieval.reader.span import ReaderRow
from tests.squad_reference import normalize_answer, v1_evaluate, v1_f1_score

WORDS = ["new", "york", "city", "Mary", "Shelley", "1,000", "U.S.", "river", "Nile", "o'neil", "state",
         "east", "côte", "d'ivoire", "2-3", "World", "War", "II", "king", "Henry"]
ARTICLES = ["a", "an", "the", "The", "A", "AN", "theater", "another"]  # the last two are not articles
PUNCT = [".", ",", "!", "?", "'", '"', "-", "(", ")", ";", ":", "...", "$", "%"]
SPACES = [" ", "  ", "\t", " \n ", ""]  # "" glues two words: "new york" -> "newyork"


def _recase(rng: random.Random, word: str) -> str:
    return rng.choice([word, word.lower(), word.upper(), word.title()])


def _phrase(rng: random.Random, words: list[str]) -> str:
    """Words joined by random spacing, with random case, punctuation and articles mixed in."""
    parts = []
    for w in words:
        if rng.random() < 0.25:
            parts.append(rng.choice(ARTICLES))
        w = _recase(rng, w)
        if rng.random() < 0.2:
            w = rng.choice(PUNCT) + w if rng.random() < 0.5 else w + rng.choice(PUNCT)
        parts.append(w)
    out = parts[0] if parts else ""
    for p in parts[1:]:
        out += rng.choice(SPACES) + p
    return rng.choice(["", " ", "\t"]) + out + rng.choice(["", " ", ".", "!"])


def _prediction(rng: random.Random, gold_words: list[str]) -> list[str]:
    """The gold's words, a part of them, extra words around them, or other words."""
    kind = rng.randrange(5)
    if kind == 0:
        return list(gold_words)
    if kind == 1:
        i = rng.randrange(len(gold_words))
        return gold_words[i:i + rng.randint(1, len(gold_words))]
    if kind == 2:
        return [rng.choice(WORDS)] + gold_words + [rng.choice(WORDS)] * rng.randint(0, 1)
    if kind == 3:
        return [w for w in gold_words if rng.random() < 0.6] or [rng.choice(ARTICLES)]
    return rng.sample(WORDS, rng.randint(1, 3))


def random_pairs(n: int, seed: int) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        golds = [rng.sample(WORDS, rng.randint(1, 3)) for _ in range(rng.randint(1, 3))]
        pred = _prediction(rng, rng.choice(golds))
        pairs.append((_phrase(rng, pred), [_phrase(rng, g) for g in golds]))
    return pairs


def official_scores(prediction: str, golds: list[str]) -> tuple[float, float]:
    """evaluate-v1.1.py's metric_max_over_ground_truths of exact_match_score and f1_score."""
    em = max(float(normalize_answer(prediction) == normalize_answer(g)) for g in golds)
    return em, max(float(v1_f1_score(prediction, g)) for g in golds)


def test_new_york_is_not_newyork():
    assert answer_scores("new york", ["newyork"]) == (0.0, 0.0)
    assert answer_scores("New  York.", ["the new york"]) == (1.0, 1.0)
    assert answer_scores("Percy Shelley", ["Mary Shelley"]) == (0.0, 0.5)
    assert answer_scores("1, 000", ["1,000"])[0] == 0.0  # the official script keeps the space
    assert answer_scores("anything", []) == (0.0, 0.0)  # a question without gold answers


def test_reader_scores_equal_the_official_v11_script_on_500_random_pairs():
    pairs = random_pairs(500, seed=40)
    ours = [answer_scores(p, g) for p, g in pairs]
    for (p, g), got in zip(pairs, ours):
        assert got == pytest.approx(official_scores(p, g), abs=1e-12), (p, g)
    # corpus means equal the script's evaluate() (0-100 scale there)
    qas = [(str(i), g) for i, (_, g) in enumerate(pairs)]
    ref = v1_evaluate(qas, {str(i): p for i, (p, _) in enumerate(pairs)})
    assert 100 * sum(e for e, _ in ours) / 500 == pytest.approx(ref["exact_match"], abs=1e-9)
    assert 100 * sum(f for _, f in ours) / 500 == pytest.approx(ref["f1"], abs=1e-9)
    # the pairs exercise every case: matches, misses, partial overlaps, and pairs that only match
    # when spaces are removed (the old reader's rule)
    em = [e for e, _ in ours]
    assert 50 < sum(em) < 450
    assert sum(1 for e, f in ours if e == 0 and 0 < f < 1) > 50
    glued = [(p, g) for (p, g), e in zip(pairs, em) if e == 0 and any(
        normalize_answer(p).replace(" ", "") == normalize_answer(x).replace(" ", "") for x in g)]
    assert len(glued) >= 5


def _row(ids: list[int]) -> ReaderRow:
    head = [101, 7, 102, 102]
    return ReaderRow(Row(head + ids + [102], [0] * (len(head) + len(ids) + 1)), len(head), len(head) + len(ids), [])


def test_answer_text_is_the_passage_span_not_decoded_wordpieces():
    from megazoo.core.data.tokenizers import build_tokenizer

    tok = build_tokenizer("bert-wordpiece")
    passage = "It cost 1,000 dollars at Beyoncé's show in New York."
    ids = tok.encode(passage)
    row = _row(ids)

    def span(words: str) -> tuple[int, int]:
        target = tok.encode(words)
        for i in range(len(ids) - len(target) + 1):
            if ids[i:i + len(target)] == target:
                return row.text_start + i, row.text_start + i + len(target) - 1
        raise AssertionError(words)

    a, b = span("1,000")
    assert tok.decode(row.row.ids[a:b + 1]) == "1, 000"  # what decoding gives: EM 0 against "1,000"
    assert answer_text(tok, passage, row, a, b) == "1,000"
    a, b = span("Beyoncé")
    assert answer_text(tok, passage, row, a, b) == "Beyoncé"
    a, b = span("New York")
    assert answer_text(tok, passage, row, a, b) == "New York"
    assert answer_scores(answer_text(tok, passage, row, a, b), ["new york"]) == (1.0, 1.0)
    # a passage whose tokens are not the row's (or a tokenizer without offsets): the decoded wordpieces
    assert answer_text(tok, "Something else entirely.", row, a, b) == "new york"
