"""The repository-size study: AUC as a function of the support size and the number of shots.

For each size (a number of posts, or "all") a class-stratified random subset of the support is
drawn (seeded; the same subset for every k), and the test posts are scored with k exemplars chosen
from it; each point carries its bootstrap interval. The zero-shot AUC is the reference line of the
plot. The paper's finding to compare with: a 100-post repository costs less than 2% AUC.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from megazoo.eval.metrics import roc_auc
from megazoo.tasks.bias.evaluate import bootstrap_ci
from megazoo.tasks.bias.selection import MAX_SHOTS

MAX_SIZE = 10_000_000  # support posts in one study point (SBIC's training set has ~35k)


def parse_sizes(text: str) -> list[int | str]:
    out: list[int | str] = []
    for word in text.split(","):
        word = word.strip()
        if word == "all":
            out.append("all")
        elif word.isdigit() and 0 < int(word) <= MAX_SIZE:
            out.append(int(word))
        else:
            raise ValueError(f"--sizes: {word!r} is not a number from 1 to {MAX_SIZE} or 'all'")
    return out


def parse_shots(text: str) -> list[int]:
    try:
        shots = [int(w) for w in text.split(",")]
    except ValueError:
        raise ValueError(f"--shots: {text!r} is not a comma-separated list of numbers") from None
    if any(k < 1 for k in shots):
        raise ValueError("--shots: every k must be >= 1 (the zero-shot line is always drawn)")
    if any(k > MAX_SHOTS for k in shots):
        raise ValueError(f"--shots: every k must be at most {MAX_SHOTS}, got {max(shots)}")
    return shots


def stratified_subset(labels: Sequence[int], size: int, seed: int) -> list[int]:
    """`size` indices keeping the class ratio (each class at least one post), in support order."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    n_pos = min(len(pos), max(1, round(size * len(pos) / len(labels))))
    n_neg = min(len(neg), size - n_pos)
    return sorted(rng.choice(pos, n_pos, replace=False).tolist() + rng.choice(neg, n_neg, replace=False).tolist())


def run_study(lm, test, support, template, sizes: Sequence[int | str], shots: Sequence[int], selection: str = "knn",
              seed: int = 0, cache=None, batch_size: int = 8, progress: bool = False, samples: int = 1000) -> dict:
    """{"zero_shot": {"auc", "ci"}, "points": [{"size", "shots", "auc", "ci"}], "skipped": [...]}."""
    from megazoo.tasks.bias.pipeline import score_posts

    labels = [p.label for p in test]
    query_vecs = support.embed([p.text for p in test]) if selection == "knn" else None

    def point(scores):
        return {"auc": roc_auc(scores, labels), "ci": bootstrap_ci(labels, scores, samples=samples, seed=seed)}

    zero = point(score_posts(lm, template, test, support, 0, selection, seed, cache, batch_size, progress))
    points, skipped = [], []
    for size in sizes:
        n = len(support.posts) if size == "all" or size >= len(support.posts) else int(size)
        subset = support if n == len(support.posts) else support.subset(stratified_subset(support.labels, n, seed))
        counts = (sum(subset.labels), len(subset.labels) - sum(subset.labels))
        for k in shots:
            if k > n or min(counts) < math.ceil(k / 2):
                skipped.append({"size": n, "shots": k, "why": f"needs {math.ceil(k / 2)} posts per class, the "
                                                             f"subset has {counts[0]} and {counts[1]}"})
                continue
            scores = score_posts(lm, template, test, subset, k, selection, seed, cache, batch_size, progress,
                                 query_vecs)
            points.append({"size": n, "label": str(size), "shots": k, **point(scores)})
    return {"zero_shot": zero, "points": points, "skipped": skipped}


def plot_study(study: dict, path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    for k in sorted({p["shots"] for p in study["points"]}):
        pts = sorted((p for p in study["points"] if p["shots"] == k), key=lambda p: p["size"])
        x = [p["size"] for p in pts]
        y = [p["auc"] for p in pts]
        err = [[p["auc"] - p["ci"][0] for p in pts], [p["ci"][1] - p["auc"] for p in pts]]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=f"k = {k}")
    zero = study["zero_shot"]
    ax.axhline(zero["auc"], ls="--", color="#777", label=f"zero-shot ({zero['auc']:.3f})")
    ax.axhline(0.5, ls=":", color="#bbb")
    ax.set_xscale("log", base=2)
    sizes = sorted({p["size"] for p in study["points"]})
    if sizes:
        ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("support repository size (posts)")
    ax.set_ylabel("ROC-AUC (95% bootstrap CI)")
    ax.set_title(title or "AUC against support size")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    from megazoo.core.fs import atomic_file

    with atomic_file(path) as f:  # never a half-written plot in place of an old one
        fig.savefig(f, format="png")
    plt.close(fig)
    return path
