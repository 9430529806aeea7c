"""Classification metrics: accuracy, micro precision/recall/F1 over chosen classes (ChemProt), ROC-AUC.

- accuracy: the fraction of predictions equal to their reference (RACE, GLUE, MT-NLG tasks).
- ChemProt: micro-averaged P/R/F1 over the five positive relation classes CPR:3, CPR:4, CPR:5,
  CPR:6 and CPR:9, with ``false`` excluded from the average (BLUE benchmark, Peng et al. 2019;
  BioBERT; BioMegatron). A ``false`` prediction of a positive pair is a miss; a positive
  prediction of a ``false`` pair is a false positive. Equals scikit-learn's
  ``f1_score(..., labels=CPR classes, average="micro")``.
- ROC-AUC: the area under the ROC curve of binary labels against real-valued scores, computed
  as the Mann-Whitney statistic with tied scores counted one half (Hanley and McNeil 1982), which
  is what scikit-learn's ``roc_auc_score`` gives for binary labels (Prabhumoye et al. 2021 use it).
"""
from __future__ import annotations

from typing import Hashable, Sequence

from megazoo.eval.metrics._util import check_pairs

CHEMPROT_CLASSES: tuple[str, ...] = ("CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9")


def accuracy(predictions: Sequence[Hashable], references: Sequence[Hashable]) -> float:
    """Fraction of predictions equal to their references, in [0, 1]."""
    check_pairs(predictions, references)
    return sum(p == r for p, r in zip(predictions, references)) / len(predictions)


def micro_prf(
    predictions: Sequence[Hashable], references: Sequence[Hashable], labels: Sequence[Hashable]
) -> dict[str, float]:
    """Micro ``{"precision", "recall", "f1"}`` counted only over the classes in ``labels``.

    True positives are pairs with prediction == reference in ``labels``; the precision
    denominator counts predictions in ``labels``, the recall denominator references in ``labels``.
    A zero denominator gives 0 (scikit-learn's ``zero_division=0``).
    """
    check_pairs(predictions, references)
    keep = set(labels)
    tp = sum(p == r and r in keep for p, r in zip(predictions, references))
    predicted = sum(p in keep for p in predictions)
    gold = sum(r in keep for r in references)
    precision = tp / predicted if predicted else 0.0
    recall = tp / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def chemprot_scores(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """ChemProt micro ``{"precision", "recall", "f1"}`` over CPR:3/4/5/6/9, ``false`` excluded."""
    return micro_prf(predictions, references, CHEMPROT_CLASSES)


def roc_auc(predictions: Sequence[float], references: Sequence[int | bool]) -> float:
    """Binary ROC-AUC of scores ``predictions`` (higher = more positive) against 0/1 ``references``."""
    check_pairs(predictions, references)
    labels = [int(r) for r in references]
    if any(r not in (0, 1) for r in labels):
        raise ValueError("roc_auc needs binary references (0/1 or False/True)")
    n_pos = sum(labels)
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("roc_auc is undefined when the references hold only one class")
    # Average ranks (1-based) over ties, then the Mann-Whitney U of the positives.
    order = sorted(range(len(predictions)), key=lambda i: predictions[i])
    ranks = [0.0] * len(order)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and predictions[order[j + 1]] == predictions[order[i]]:
            j += 1
        mean_rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = mean_rank
        i = j + 1
    pos_rank_sum = sum(rank for rank, y in zip(ranks, labels) if y)
    return (pos_rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
