"""BioASQ factoid question answering: strict accuracy, lenient accuracy and MRR.

The BioASQ Task B definitions (Tsatsaronis et al. 2015) as BioBERT and BioMegatron report them:
each question has up to 5 ranked candidate answers; strict accuracy counts questions whose
top-ranked candidate is a gold synonym, lenient accuracy questions with a gold synonym among the
5, and MRR is the mean of 1 / rank of the first correct candidate within the 5 (0 without one).
A candidate matches a gold synonym by case-insensitive equality after stripping surrounding
whitespace.
"""
from __future__ import annotations

from typing import Sequence

from megazoo.eval.metrics._util import check_pairs


def _flatten_synonyms(golds: Sequence[str] | Sequence[Sequence[str]] | str) -> list[str]:
    # BioASQ stores factoid ``exact_answer`` as a list of synonym lists; accept flat lists too.
    if isinstance(golds, str):
        return [golds]
    flat: list[str] = []
    for g in golds:
        flat.extend([g] if isinstance(g, str) else list(g))
    return flat


def first_match_rank(candidates: Sequence[str], golds: Sequence[str] | Sequence[Sequence[str]],
                     top_k: int = 5) -> int | None:
    """1-based rank of the first candidate among the first ``top_k`` that is a gold synonym, or None."""
    if isinstance(candidates, str):
        raise TypeError("each prediction must be a ranked list of candidate strings")
    wanted = {g.strip().lower() for g in _flatten_synonyms(golds)}
    for rank, cand in enumerate(list(candidates)[:top_k], start=1):
        if cand.strip().lower() in wanted:
            return rank
    return None


def bioasq_factoid_scores(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str] | Sequence[Sequence[str]]],
    top_k: int = 5,
) -> dict[str, float]:
    """``{"strict_accuracy", "lenient_accuracy", "mrr"}`` in [0, 1].

    ``predictions[i]`` is the ranked candidate list of question i (only the first ``top_k`` = 5
    count), ``references[i]`` its gold synonyms (flat, or BioASQ's list of synonym lists).
    """
    check_pairs(predictions, references)
    ranks = [first_match_rank(c, g, top_k) for c, g in zip(predictions, references)]
    n = len(ranks)
    return {
        "strict_accuracy": sum(r == 1 for r in ranks) / n,
        "lenient_accuracy": sum(r is not None for r in ranks) / n,
        "mrr": sum(1.0 / r for r in ranks if r is not None) / n,
    }
