"""Generation metrics: corpus BLEU (sacrebleu), ROUGE-L (rouge-score), distinct-n and repeat-n.

- BLEU is sacrebleu's ``corpus_bleu`` (Post 2018) with its defaults (13a tokenisation, exponential
  smoothing), as a fraction in [0, 1] (sacrebleu's score / 100; print it times 100).
- ROUGE-L is Google's ``rouge-score`` ``rougeL`` (Lin 2004; LCS over the package's lowercased
  alphanumeric tokens): the mean over pairs of the F-measure (precision and recall likewise);
  with several references a pair takes the reference of best F-measure (``score_multi``).
- METEOR is nltk's ``meteor_score`` (Banerjee & Lavie 2005: exact, Porter-stem and WordNet-synonym
  matches, fragmentation penalty; alpha 0.9, beta 3, gamma 0.5) with WordNet 3.0 read offline
  (megazoo.eval.metrics.wordnet), on whitespace tokens, lowercased: the mean over pairs, in [0, 1].
- distinct-n (Li et al. 2016) is the number of distinct n-grams over all generations divided by
  the number of n-grams over all generations (MEGATRON-CNTRL reports Distinct-4).
- repeat-n is the fraction of generations that contain at least one n-gram twice
  (MEGATRON-CNTRL's Repeat-4, after Guan et al. 2020; lower is better).
Generations are split on whitespace unless they are passed already as token lists.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from megazoo.eval.metrics._util import check_pairs

Text = str | Sequence[str]


def _multi_refs(references: Sequence[str | Sequence[str]]) -> list[list[str]]:
    return [[r] if isinstance(r, str) else list(r) for r in references]


def bleu(
    predictions: Sequence[str],
    references: Sequence[str | Sequence[str]],
    tokenize: str = "13a",
    lowercase: bool = False,
) -> float:
    """sacrebleu corpus BLEU in [0, 1]. ``references[i]``: one string or a list of references.

    Every prediction must have the same number of references (sacrebleu's reference streams).
    """
    import sacrebleu

    check_pairs(predictions, references)
    refs = _multi_refs(references)
    counts = {len(r) for r in refs}
    if len(counts) != 1 or 0 in counts:
        raise ValueError(f"every prediction needs the same, non-zero number of references, got {sorted(counts)}")
    streams = [list(stream) for stream in zip(*refs)]  # sacrebleu wants one list per reference index
    result = sacrebleu.corpus_bleu(list(predictions), streams, tokenize=tokenize, lowercase=lowercase)
    return float(result.score) / 100.0


def rouge_l(
    predictions: Sequence[str], references: Sequence[str | Sequence[str]], use_stemmer: bool = False
) -> dict[str, float]:
    """Mean rouge-score ``rougeL`` ``{"precision", "recall", "fmeasure"}`` over pairs, in [0, 1]."""
    from rouge_score import rouge_scorer

    check_pairs(predictions, references)
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    totals = [0.0, 0.0, 0.0]
    for pred, refs in zip(predictions, _multi_refs(references)):
        if not refs:
            raise ValueError("a prediction has no reference")
        score = scorer.score_multi(refs, pred)["rougeL"]
        totals[0] += score.precision
        totals[1] += score.recall
        totals[2] += score.fmeasure
    n = len(predictions)
    return {"precision": totals[0] / n, "recall": totals[1] / n, "fmeasure": totals[2] / n}


def meteor(predictions: Sequence[str], references: Sequence[str | Sequence[str]]) -> float:
    """Mean nltk METEOR over pairs (several references: nltk's best one per pair), in [0, 1]."""
    from nltk.translate.meteor_score import meteor_score

    from megazoo.eval.metrics.wordnet import load_wordnet

    check_pairs(predictions, references)
    wordnet = load_wordnet()
    total = 0.0
    for pred, refs in zip(predictions, _multi_refs(references)):
        if not refs:
            raise ValueError("a prediction has no reference")
        total += meteor_score([r.split() for r in refs], pred.split(), wordnet=wordnet)
    return total / len(predictions)


def _tokens(text: Text) -> list[str]:
    return text.split() if isinstance(text, str) else list(text)


def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The n-grams of one token sequence, in order."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def distinct_n(generations: Sequence[Text], n: int = 4) -> float:
    """Distinct n-grams / all n-grams over every generation (0.0 when there is no n-gram)."""
    counts: Counter[tuple[str, ...]] = Counter()
    for text in generations:
        counts.update(ngrams(_tokens(text), n))
    total = sum(counts.values())
    return len(counts) / total if total else 0.0


def repeat_n(generations: Sequence[Text], n: int = 4) -> float:
    """Fraction of generations in which some n-gram occurs at least twice."""
    if not generations:
        raise ValueError("no generations to score")
    repeated = 0
    for text in generations:
        grams = ngrams(_tokens(text), n)
        repeated += len(set(grams)) < len(grams)
    return repeated / len(generations)
