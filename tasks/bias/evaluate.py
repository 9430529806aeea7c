"""The paper's metrics on per-post scores: ROC-AUC (the headline), accuracy, precision, recall and F1
at a threshold (0.5, and one tuned on dev data), and bootstrap confidence intervals.

The metrics are megazoo.eval.metrics: ROC-AUC is scikit-learn's `roc_auc_score` (`roc_auc`), so
reported figures are exactly the library's; the bootstrap uses its rank form (`mann_whitney_auc`,
equal to the last bit): a thousand resamples cost milliseconds instead of a second. The threshold
metrics are `accuracy` and the positive class's `micro_prf`. This module keeps the study's
procedure around them: the dev-tuned threshold, the bootstrap and the summary.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from megazoo.eval.metrics import accuracy, mann_whitney_auc, micro_prf, roc_auc
from megazoo.tasks.bias.data import post_id

METRICS = ("auc", "accuracy", "precision", "recall", "f1")


def threshold_metrics(labels: Sequence[int], scores: Sequence[float], threshold: float = 0.5) -> dict:
    """accuracy, precision, recall, F1 of "score >= threshold means positive" (0 where undefined)."""
    y = [int(v) for v in labels]
    pred = [int(v) for v in np.asarray(scores, dtype=np.float64) >= threshold]
    return {"accuracy": accuracy(pred, y), **micro_prf(pred, y, labels=[1])}


def tune_threshold(labels: Sequence[int], scores: Sequence[float]) -> float:
    """The threshold that maximises F1 on (dev) scores: midway between two adjacent distinct scores
    (accuracy breaks ties, then the threshold nearest 0.5)."""
    s = np.unique(np.asarray(scores, dtype=np.float64))
    candidates = [float(s[0])] + [float((a + b) / 2) for a, b in zip(s[:-1], s[1:])] + [float(s[-1]) + 1e-9]

    def rank(t: float) -> tuple:
        m = threshold_metrics(labels, scores, t)
        return round(m["f1"], 12), round(m["accuracy"], 12), -abs(t - 0.5)

    return max(candidates, key=rank)


def bootstrap_ci(labels: Sequence[int], scores: Sequence[float], metric=mann_whitney_auc, samples: int = 1000,
                 seed: int = 0, level: float = 0.95) -> list[float]:
    """Percentile bootstrap interval of `metric(scores, labels)` (an eval.metrics function) over posts
    resampled with replacement (resamples with one class only are drawn again)."""
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=np.float64)
    rng = np.random.default_rng(seed)
    values = []
    while len(values) < samples:
        idx = rng.integers(0, len(y), len(y))
        if 0 < y[idx].sum() < len(idx):
            values.append(metric(s[idx], y[idx]))
    lo, hi = np.quantile(values, [(1 - level) / 2, 1 - (1 - level) / 2])
    return [float(lo), float(hi)]


def summarise(labels: Sequence[int], scores: Sequence[float], threshold: float | None = None,
              samples: int = 1000, seed: int = 0) -> dict:
    """{"metrics": {auc, accuracy, precision, recall, f1 at 0.5 [, *_tuned at `threshold`]}, "ci": {"auc": [lo, hi]}}."""
    metrics = {"auc": roc_auc(scores, labels), **threshold_metrics(labels, scores, 0.5)}
    if threshold is not None:
        metrics.update({f"{k}_tuned": v for k, v in threshold_metrics(labels, scores, threshold).items()})
    return {"metrics": metrics, "ci": {"auc": bootstrap_ci(labels, scores, samples=samples, seed=seed)}}


def prediction_rows(posts, scores: Sequence[float]) -> list[dict]:
    """The predictions file's rows: {"id" (data.post_id), "post", "label", "score"} per post, in
    order; the prompts and the fine-tuned classifier write the same rows, so their files line up."""
    return [{"id": post_id(p.text), "post": p.text, "label": p.label, "score": float(s)}
            for p, s in zip(posts, scores)]
