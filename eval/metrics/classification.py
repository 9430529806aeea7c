"""Classification metrics: accuracy, micro precision/recall/F1 over chosen classes (ChemProt), ROC-AUC.

- accuracy: the fraction of predictions equal to their reference (RACE, GLUE, MT-NLG tasks).
- ChemProt: micro-averaged P/R/F1 over the five positive relation classes CPR:3, CPR:4, CPR:5,
  CPR:6 and CPR:9, with ``false`` excluded from the average (BLUE benchmark, Peng et al. 2019;
  BioBERT; BioMegatron). A ``false`` prediction of a positive pair is a miss; a positive
  prediction of a ``false`` pair is a false positive. Equals scikit-learn's
  ``f1_score(..., labels=CPR classes, average="micro")``.
- ROC-AUC: scikit-learn's ``roc_auc_score`` of binary labels against real-valued scores (Prabhumoye
  et al. 2021 report it). ``mann_whitney_auc`` is the same area as the Mann-Whitney statistic
  (ties count one half; Hanley and McNeil 1982) from average ranks, correctly rounded: the two
  differ at most in the last bit, and the rank form is fast enough for thousands of bootstrap
  resamples.
"""
from __future__ import annotations

from typing import Hashable, Sequence

import numpy as np

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
    A zero denominator gives 0 (scikit-learn's ``zero_division=0``). With ``labels=[1]`` this is
    binary precision, recall and F1 of the positive class.
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


def _binary(predictions: Sequence[float], references: Sequence[int | bool]) -> tuple[np.ndarray, np.ndarray]:
    check_pairs(predictions, references)
    raw = np.asarray(references)
    if raw.ndim != 1 or not np.isin(raw, (0, 1)).all():
        raise ValueError("ROC-AUC needs binary references (0/1 or False/True)")
    y = raw.astype(np.int64)
    if y.sum() == 0 or y.sum() == len(y):
        raise ValueError(f"ROC-AUC needs both positive and negative references; all {len(y)} are "
                         f"{'positive' if y[0] else 'negative'}")
    return np.asarray(predictions, dtype=np.float64), y


def roc_auc(predictions: Sequence[float], references: Sequence[int | bool]) -> float:
    """scikit-learn's binary ROC-AUC of scores ``predictions`` (higher = more positive) against 0/1 ``references``."""
    from sklearn.metrics import roc_auc_score

    scores, y = _binary(predictions, references)
    return float(roc_auc_score(y, scores))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing their average rank."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])  # the first position of each run of ties
    ends = np.r_[starts[1:], len(xs)]
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return ranks


def mann_whitney_auc(predictions: Sequence[float], references: Sequence[int | bool]) -> float:
    """The ROC-AUC as the Mann-Whitney U statistic over n_pos * n_neg pairs (see the module doc)."""
    scores, y = _binary(predictions, references)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    # exact in float64: rank sums are multiples of 1/2 far below 2**52
    u = _average_ranks(scores)[y == 1].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))
