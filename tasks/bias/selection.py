"""Which k exemplars of the support repository go into each query's prompt.

- `knn` (the paper's): class-balanced nearest neighbours in embedding space: the k/2 support posts
  of each class most similar to the query (cosine of normalised sentence embeddings);
- `random` (ablation): k/2 posts of each class drawn at random for each query (seeded);
- `fixed` (ablation): one class-balanced random draw used for every query.

All three are class-balanced, so they differ only in which posts are chosen. An odd k gives the
extra exemplar to the class of the nearest (knn) or a random (random, fixed) post. Exemplars are
ordered from least to most similar (knn), so the closest one sits next to the query, and
interleaved by class otherwise. A query never gets its own text as an exemplar.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


METHODS = ("knn", "random", "fixed")
MAX_SHOTS = 256  # exemplars per prompt: far past any context, far below what would exhaust memory


class SelectionError(ValueError):
    """A support repository that cannot give the requested exemplars."""


def check_support(labels: Sequence[int], shots: int, method: str = "knn") -> None:
    """Refuse what class balance or the size of the support makes impossible."""
    if method not in METHODS:
        raise SelectionError(f"unknown selection {method!r}; choose one of {', '.join(METHODS)}")
    if shots < 0:
        raise SelectionError(f"--shots must be >= 0, got {shots}")
    if shots == 0:
        return
    labels = list(labels)
    if shots > len(labels):
        raise SelectionError(f"--shots {shots} is larger than the support set ({len(labels)} posts)")
    counts = {c: labels.count(c) for c in (0, 1)}
    if min(counts.values()) == 0:
        only = "positive" if counts[1] else "negative"
        raise SelectionError(f"the support set has only {only} posts ({len(labels)}); class-balanced exemplars "
                             f"need both classes")
    need = (shots + 1) // 2
    if min(counts.values()) < need:
        raise SelectionError(f"--shots {shots} needs {need} posts of each class; the support set has "
                             f"{counts[1]} positive and {counts[0]} negative")


def _balanced(order_by_class: dict[int, list[int]], shots: int, first: int) -> list[int]:
    """k/2 from each class's ranked list; the odd one from class `first`."""
    take = {c: shots // 2 for c in (0, 1)}
    take[first] += shots % 2
    return [i for c in (0, 1) for i in order_by_class[c][: take[c]]]


def select(query_vecs: np.ndarray | None, support_vecs: np.ndarray | None, labels: Sequence[int], shots: int,
           method: str = "knn", seed: int = 0, exclude: Sequence[int | None] | None = None) -> list[list[int]]:
    """For each query, the indices into the support of its exemplars (in prompt order).

    `query_vecs` [q, h] and `support_vecs` [n, h] are L2-normalised embeddings (knn only; the
    others need just the number of queries, `len(query_vecs)`); `exclude[j]` is a support index
    that query j may not use (the query itself)."""
    labels = np.asarray(labels, dtype=int)
    check_support(labels.tolist(), shots, method)
    n_queries = len(query_vecs) if query_vecs is not None else len(exclude or [])
    if shots == 0:
        return [[] for _ in range(n_queries)]
    exclude = list(exclude) if exclude is not None else [None] * n_queries
    rng = np.random.default_rng(seed)
    by_class = {c: np.flatnonzero(labels == c).tolist() for c in (0, 1)}
    if method == "fixed":
        draw = {c: rng.permutation(by_class[c]).tolist() for c in (0, 1)}
        first = int(rng.integers(2))
    out = []
    for j in range(n_queries):
        skip = exclude[j]
        if method == "knn":
            sims = support_vecs @ query_vecs[j]
            ranked = [int(i) for i in np.argsort(-sims, kind="stable") if i != skip]
            ranked_by_class = {c: [i for i in ranked if labels[i] == c] for c in (0, 1)}
            chosen = _balanced(ranked_by_class, shots, int(labels[ranked[0]]))
            out.append(sorted(chosen, key=lambda i: sims[i]))  # most similar last, next to the query
            continue
        if method == "random":
            draw = {c: rng.permutation(by_class[c]).tolist() for c in (0, 1)}
            first = int(rng.integers(2))
        pools = {c: [i for i in draw[c] if i != skip] for c in (0, 1)}
        chosen = _balanced(pools, shots, first)
        out.append(_interleave(chosen, labels))
    return out


def _interleave(indices: list[int], labels: np.ndarray) -> list[int]:
    """Alternate the classes (no run of one label for the model to copy)."""
    pos = [i for i in indices if labels[i] == 1]
    neg = [i for i in indices if labels[i] == 0]
    out = []
    while pos or neg:
        for group in (neg, pos):
            if group:
                out.append(group.pop(0))
    return out


def embed_texts(texts: Sequence[str], embedder) -> np.ndarray:
    """L2-normalised mean-pooled sentence embeddings from a megazoo `Embedder` (zoo/embed.py)."""
    return embedder.encode(list(texts), pooling="mean", normalize=True)

