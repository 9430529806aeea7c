"""Text-matching metrics against hand-computed cases written from their official definitions:
SQuAD (evaluate-v1.1/v2.0.py), BioASQ factoid, DPR has_answer / top-k, ParlAI unigram F1."""
import math

import pytest

from megazoo.eval.metrics import (
    bioasq_factoid_scores,
    dpr_tokenize,
    has_answer,
    knowledge_f1_scores,
    parlai_normalize,
    retrieval_top_k_accuracy,
    squad_exact_match,
    squad_f1,
    squad_normalize,
    squad_scores,
    top_k_accuracy,
    unigram_f1_scores,
    unigram_prf,
)


# ---- SQuAD -------------------------------------------------------------------------------------

def test_squad_normalisation():
    assert squad_normalize("The  Eiffel Tower!") == "eiffel tower"
    assert squad_normalize("an apple, a pear and THE plum.") == "apple pear and plum"
    assert squad_normalize("theater") == "theater"  # articles only as whole words
    assert squad_normalize("U.S.-born") == "usborn"  # punctuation is deleted, not spaced


def test_squad_max_over_golds():
    assert squad_exact_match("The Eiffel Tower!", ["eiffel tower"]) == 1.0
    # pred tokens [in, paris, france]; gold [paris]: P=1/3 R=1 F1=1/2; gold [frances, capital, paris]: 1/3
    assert squad_f1("in Paris, France", ["Paris", "France's capital Paris"]) == pytest.approx(0.5)
    assert squad_exact_match("in Paris, France", ["Paris", "France's capital Paris"]) == 0.0
    # repeated tokens count as a multiset: pred [paris, paris], gold [paris] -> P=1/2 R=1
    assert squad_f1("Paris Paris", "Paris") == pytest.approx(2 / 3)
    assert squad_f1("London", ["Paris"]) == 0.0


def test_squad_corpus_scores_are_fractions():
    scores = squad_scores(["Paris", "in Paris, France"], [["Paris"], ["Paris"]])
    assert scores["exact_match"] == pytest.approx(0.5)
    assert scores["f1"] == pytest.approx((1 + 0.5) / 2)


def test_squad_v2_empty_answers():
    # v1.1: both normalise to empty -> EM 1 but F1 0 (no common token); v2.0: F1 1
    assert squad_exact_match("the", ["a"]) == 1.0
    assert squad_f1("the", ["a"]) == 0.0
    assert squad_f1("the", ["a"], squad_v2=True) == 1.0
    v2 = squad_scores(["", "Paris"], [[], []], squad_v2=True)
    assert v2 == {"exact_match": 0.5, "f1": 0.5, "no_ans_exact_match": 0.5, "no_ans_f1": 0.5}
    # v2.0 drops a gold answer that normalises to nothing ("a"): "" is then wrong, as the official script says
    assert squad_scores([""], [["a", "x"]], squad_v2=True)["exact_match"] == 0.0
    with pytest.raises(ValueError, match="needs at least one gold answer"):
        squad_f1("x", [])


def test_squad_pairs_must_match():
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        squad_scores(["a", "b"], [["a"]])


# ---- BioASQ factoid ----------------------------------------------------------------------------

def test_bioasq_factoid():
    predictions = [
        ["cftr", "x"],                       # rank 1 (case-insensitive)
        ["a", "b", "c", "d", "e", "F"],      # the match is at rank 6: outside the top 5
        ["q", " Gene X "],                   # rank 2 (surrounding spaces ignored)
        ["n1", "n2"],                        # no match
    ]
    references = [["CFTR"], [["F"], ["zz"]], ["gene x", "GX"], ["y"]]
    scores = bioasq_factoid_scores(predictions, references)
    assert scores["strict_accuracy"] == pytest.approx(1 / 4)
    assert scores["lenient_accuracy"] == pytest.approx(2 / 4)
    assert scores["mrr"] == pytest.approx((1 + 0 + 1 / 2 + 0) / 4)


# ---- DPR ---------------------------------------------------------------------------------------

def test_dpr_tokenisation():
    assert dpr_tokenize("Shelley's 1,000 cafés!") == ["shelley", "'", "s", "1", ",", "000", "cafe\u0301s", "!"]


def test_has_answer_string_mode():
    text = "Frankenstein was written by Mary Shelley in 1818."
    assert has_answer(["mary shelley"], text)
    assert has_answer(["Percy", "MARY SHELLEY"], text)
    assert not has_answer(["Shell"], text)                # tokens must match whole
    assert not has_answer(["Shelley Mary"], text)         # and be contiguous in order
    assert has_answer(["Shelley"], "Shelley's novel")      # "'" splits off as its own token
    assert has_answer(["café"], "the cafe\u0301 opened")  # NFD on both sides
    assert not has_answer(["cafe"], "the café opened")     # the accent is a mark inside the token
    assert has_answer(["1,000"], "about 1,000 people")
    assert not has_answer(["1000"], "about 1,000 people")


def test_has_answer_regex_mode():
    text = "Frankenstein was written by Mary Shelley in 1818."
    assert has_answer([r"shel+ey\b"], text, match="regex")
    assert has_answer([r"18[0-9]{2}"], text, match="regex")
    assert not has_answer(["(unclosed"], text, match="regex")  # an invalid pattern never matches
    with pytest.raises(ValueError, match="unknown match mode"):
        has_answer(["x"], text, match="fuzzy")


def test_top_k_accuracy():
    hits = [[False, True, False], [False, False, False], [True, False, False], [False, False, True]]
    assert top_k_accuracy(hits, ks=(1, 2, 3, 100)) == {"top1": 0.25, "top2": 0.5, "top3": 0.75, "top100": 0.75}
    scores = retrieval_top_k_accuracy(
        [["Mary Shelley"], ["Paris"]],
        [["Percy wrote poems.", "Mary Shelley wrote it."], ["Paris is in France.", "Rome."]],
        ks=(1, 2),
    )
    assert scores == {"top1": 0.5, "top2": 1.0}


# ---- ParlAI F1 ---------------------------------------------------------------------------------

def test_parlai_normalisation():
    assert parlai_normalize("The cat's TOY_box, (a) gift!") == "cat s toy box gift"
    assert parlai_normalize("don't-stop") == "don t stop"  # punctuation becomes a space


def test_unigram_f1_and_skipping():
    # response [cat, sat, on, mat], reference [cat, is, on, mat]: 3 shared -> P = R = F1 = 3/4
    assert unigram_prf("The cat sat on the mat.", "A cat is on a mat") == pytest.approx((0.75, 0.75, 0.75))
    assert unigram_prf("anything", "") is None
    assert unigram_prf("anything", "no_passages_used") is None
    assert unigram_prf("", "hello") == (0.0, 0.0, 0.0)
    scores = unigram_f1_scores(
        ["The cat sat on the mat.", "whatever", "", "hello hello world"],
        ["A cat is on a mat", "no_passages_used", "hello", "hello there"],
    )
    # pair 4: response [hello, hello, world], reference [hello, there]: 1 shared -> P=1/3 R=1/2 F1=0.4
    assert scores["count"] == 3
    assert scores["f1"] == pytest.approx((0.75 + 0.0 + 0.4) / 3)
    assert scores["precision"] == pytest.approx((0.75 + 0 + 1 / 3) / 3)
    assert scores["recall"] == pytest.approx((0.75 + 0 + 0.5) / 3)
    kf1 = knowledge_f1_scores(["the blue whale is big"], ["The blue whale is the largest animal."])
    # [blue, whale, is, big] vs [blue, whale, is, largest, animal]: 3 shared -> P=3/4 R=3/5
    assert kf1["f1"] == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    with pytest.raises(ValueError, match="every reference is empty"):
        unigram_f1_scores(["x"], [""])
    assert math.isclose(unigram_f1_scores(["a the"], ["the an"])["f1"], 0.0)  # articles only: no token left
