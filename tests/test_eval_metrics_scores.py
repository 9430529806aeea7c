"""Score metrics against independent references: seqeval (NER), scikit-learn (F1, accuracy,
ROC-AUC), sacrebleu (BLEU), rouge-score (ROUGE-L); hand-computed cases from the definitions for
distinct/repeat-n, EMT/TP and Megatron's (adjusted) perplexity and window plan."""
import math
import random

import pytest

from megazoo.eval.metrics import (
    CHEMPROT_CLASSES,
    accuracy,
    adjusted_perplexity,
    bleu,
    chemprot_scores,
    distinct_n,
    get_entities,
    ner_scores,
    original_token_count,
    perplexity,
    plan_windows,
    repeat_n,
    roc_auc,
    rouge_l,
    toxicity_scores,
)

# ---- NER against seqeval (default mode) --------------------------------------------------------

_TAGS = ["O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG", "B", "I", "E-LOC", "S-PER"]


def _random_sentences(rng, n):
    return [[rng.choice(_TAGS) for _ in range(rng.randint(1, 9))] for _ in range(n)]


def test_ner_matches_seqeval_on_random_iob1_iob2_tags():
    from seqeval.metrics import classification_report, f1_score, precision_score, recall_score

    rng = random.Random(0)
    for _ in range(60):
        gold = _random_sentences(rng, 6)
        pred = [[rng.choice(_TAGS) if rng.random() < 0.3 else t for t in s] for s in gold]
        ours = ner_scores(pred, gold)
        assert ours["precision"] == pytest.approx(precision_score(gold, pred))
        assert ours["recall"] == pytest.approx(recall_score(gold, pred))
        assert ours["f1"] == pytest.approx(f1_score(gold, pred))
        report = classification_report(gold, pred, output_dict=True, zero_division=0)
        for kind, row in ours["per_type"].items():
            if row["support"]:
                assert row["f1"] == pytest.approx(report[kind]["f1-score"])
                assert row["support"] == report[kind]["support"]


def test_ner_iob1_and_iob2_chunks():
    # IOB1: I opens a chunk; B only splits two adjacent chunks of one type
    assert get_entities(["I-PER", "I-PER", "B-PER", "O", "I-LOC"]) == [("PER", 0, 1), ("PER", 2, 2), ("LOC", 4, 4)]
    # IOB2 with BioBERT's bare tags (type "_"), and a type change closing a chunk
    assert get_entities(["B", "I", "O", "B", "B", "I"]) == [("_", 0, 1), ("_", 3, 3), ("_", 4, 5)]
    assert get_entities(["B-PER", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 1)]
    scores = ner_scores([["B", "I", "O", "B"]], [["B", "I", "O", "O"]])
    assert (scores["precision"], scores["recall"]) == (0.5, 1.0)
    with pytest.raises(ValueError, match="sentence 0: 2 predicted tags but 1 gold tags"):
        ner_scores([["O", "O"]], [["O"]])


# ---- classification against scikit-learn ------------------------------------------------------

def test_accuracy_and_chemprot_match_sklearn():
    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

    rng = random.Random(1)
    labels = list(CHEMPROT_CLASSES) + ["false"] * 4
    for _ in range(20):
        gold = [rng.choice(labels) for _ in range(50)]
        pred = [rng.choice(labels) if rng.random() < 0.5 else g for g in gold]
        assert accuracy(pred, gold) == pytest.approx(accuracy_score(gold, pred))
        ours = chemprot_scores(pred, gold)
        kw = dict(labels=list(CHEMPROT_CLASSES), average="micro", zero_division=0)
        assert ours["f1"] == pytest.approx(f1_score(gold, pred, **kw))
        assert ours["precision"] == pytest.approx(precision_score(gold, pred, **kw))
        assert ours["recall"] == pytest.approx(recall_score(gold, pred, **kw))


def test_roc_auc_matches_sklearn_with_ties():
    from sklearn.metrics import roc_auc_score

    rng = random.Random(2)
    for _ in range(20):
        y = [rng.randint(0, 1) for _ in range(40)]
        y[0], y[1] = 0, 1
        scores = [round(rng.random(), 1) for _ in y]  # coarse scores: many ties
        assert roc_auc(scores, y) == pytest.approx(roc_auc_score(y, scores))
    assert roc_auc([0.1, 0.9], [False, True]) == 1.0
    with pytest.raises(ValueError, match="needs both positive and negative"):
        roc_auc([0.1, 0.2], [1, 1])


# ---- BLEU / ROUGE-L against sacrebleu and rouge-score ------------------------------------------

HYPS = ["the cat sat on the mat today", "a quick brown fox jumps over the dog", "hello there general kenobi"]
REFS = ["the cat is on the mat today", "the quick brown fox jumped over the lazy dog", "hello there general kenobi"]


def test_bleu_matches_sacrebleu():
    import sacrebleu

    assert bleu(HYPS, REFS) == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).score / 100)  # a fraction
    second = ["the cat was on a mat today", "a fast brown fox jumps over the dog", "hi there"]
    multi = [[a, b] for a, b in zip(REFS, second)]
    assert bleu(HYPS, multi) == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS, second]).score / 100)
    assert bleu(HYPS, REFS, lowercase=True) == pytest.approx(
        sacrebleu.corpus_bleu(HYPS, [REFS], lowercase=True).score / 100)
    assert bleu(["the same sentence of five words"], ["the same sentence of five words"]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="same, non-zero number of references"):
        bleu(["a", "b"], [["a"], ["b", "c"]])


def test_rouge_l_matches_rouge_score():
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    expected = [scorer.score(r, h)["rougeL"] for h, r in zip(HYPS, REFS)]
    ours = rouge_l(HYPS, REFS)
    assert ours["fmeasure"] == pytest.approx(sum(s.fmeasure for s in expected) / 3)
    assert ours["precision"] == pytest.approx(sum(s.precision for s in expected) / 3)
    # hand LCS: "the cat sat on the mat" vs "the cat is on the mat": LCS 5 of 6 tokens each
    assert rouge_l(["the cat sat on the mat"], ["the cat is on the mat"])["fmeasure"] == pytest.approx(5 / 6)
    # several references: the best one counts
    assert rouge_l(["the cat sat"], [["a dog ran", "the cat sat"]])["fmeasure"] == pytest.approx(1.0)


# ---- distinct-n / repeat-n (hand) ---------------------------------------------------------------

def test_distinct_and_repeat():
    gens = ["a b c d e", "a b c d a b c d"]
    # 4-grams: (abcd, bcde) + (abcd, bcda, cdab, dabc, abcd) = 7, distinct 5
    assert distinct_n(gens, 4) == pytest.approx(5 / 7)
    assert repeat_n(gens, 4) == pytest.approx(1 / 2)
    assert distinct_n([["x", "y"], ["x"]], 1) == pytest.approx(2 / 3)  # pre-tokenised input
    assert distinct_n(["too short"], 4) == 0.0
    assert repeat_n(["a a", "b c"], 1) == 0.5


# ---- toxicity (hand) ---------------------------------------------------------------------------

def test_expected_max_toxicity_and_probability():
    k = 3
    scores = [0.1, 0.6, None, 0.2, 0.3, 0.4, 0.9, 0.5, 0.5, None, None, None]
    prompt_tox = [0.7, 0.1, None, 0.0]
    result = toxicity_scores(scores, k=k, prompt_toxicity=prompt_tox)
    # maxima: 0.6, 0.4, 0.9, -1 (no score counts -1); toxic (> 0.5, strict): yes, no, yes, no
    full = result["full"]
    assert full["emt"] == pytest.approx(0.225)
    assert full["emt_std"] == pytest.approx(math.sqrt(2.1275 / 4))
    assert full["tp"] == pytest.approx(0.5)
    assert full["n"] == 4
    assert result["toxic"] == {"emt": pytest.approx(0.6), "emt_std": pytest.approx(0.0), "tp": 1.0, "n": 1}  # prompt 0
    nontoxic = result["nontoxic"]  # prompts 1 and 3 (0.0 counts as nontoxic; None is in no subset)
    assert nontoxic["emt"] == pytest.approx(-0.3)
    assert nontoxic["tp"] == 0.0
    assert nontoxic["n"] == 2
    nested = toxicity_scores([scores[i:i + 3] for i in range(0, 12, 3)], k=3)
    assert nested["full"] == full
    with pytest.raises(ValueError, match="not a multiple of k=5"):
        toxicity_scores(scores, k=5)


# ---- perplexity (hand) ------------------------------------------------------------------------

def test_perplexity_and_adjusted_perplexity():
    assert perplexity(6.0, 3) == pytest.approx(math.exp(2.0))
    # L = 30 nats over N_bpe = 11 tokens (10 targets), N_orig = 6 words: loss 3, ratio 10/5 = 2
    out = adjusted_perplexity(30.0, 11, 6)
    assert out["avg_loss"] == pytest.approx(3.0)
    assert out["ppl"] == pytest.approx(math.exp(3.0))
    assert out["token_ratio"] == pytest.approx(2.0)
    assert out["adjusted_ppl"] == pytest.approx(math.exp(6.0))
    capped = adjusted_perplexity(1e4, 11, 6)
    assert capped["ppl"] == pytest.approx(math.exp(20)) and capped["adjusted_ppl"] == pytest.approx(math.exp(20))
    # split(" ") on the stripped raw text: the newline sticks between two single spaces
    assert original_token_count(" = Title = \n Hello world . \n") == 7


def _megatron_scored_targets(num_tokens, seq_length, stride):
    """(target index, window start) pairs Megatron's WikiText dataset scores, from its definition:
    window i starts at i*stride, holds seq_length+1 tokens (padded), scores all real targets if
    i == 0 and only real targets among its last `stride` positions otherwise."""
    total_targets = num_tokens - 1
    windows = max(math.ceil(max(total_targets - stride, 0) / stride) + 1, 1)
    scored = []
    for i in range(windows):
        start = i * stride
        for j in range(seq_length):  # position j predicts token start + j + 1
            target = start + j + 1
            if target >= num_tokens:
                continue
            if i > 0 and stride != seq_length and j < seq_length - stride:
                continue
            scored.append((target, start))
    return scored


@pytest.mark.parametrize("num_tokens", [1, 2, 5, 17, 64, 65, 100])
@pytest.mark.parametrize("seq_length,stride", [(8, 8), (8, 3), (8, 1), (16, 5), (4, None)])
def test_window_plan_matches_megatron(num_tokens, seq_length, stride):
    windows = plan_windows(num_tokens, seq_length, stride)
    ours = [(t, w.begin) for w in windows for t in range(w.score_begin, w.end)]
    assert sorted(ours) == sorted(_megatron_scored_targets(num_tokens, seq_length, stride or seq_length))
    assert sorted(t for t, _ in ours) == list(range(1, num_tokens))  # every target exactly once
    for w in windows:
        assert w.num_inputs <= seq_length and w.num_scored >= 1


def test_window_plan_rejects_bad_stride():
    with pytest.raises(ValueError, match="stride must be between 1 and seq_length=8"):
        plan_windows(100, 8, 9)
