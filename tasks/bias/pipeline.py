"""One evaluation: exemplars for each test post, the prompts, their scores and the metrics.

    support = Repository(load_posts("support.csv"), embedder)     # embeds the support once
    record = evaluate_posts(lm, load_posts("test.csv"), support, load_template("offensive"),
                            shots=8, selection="knn", cache=ScoreCache("scores.jsonl"))

With dev posts the decision threshold is tuned on them (max F1) and the metrics are also reported
at that threshold (`*_tuned`); dev prompts get their exemplars from the same support repository.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from megazoo.tasks.bias.data import Post
from megazoo.tasks.bias.evaluate import prediction_rows, summarise, tune_threshold
from megazoo.tasks.bias.prompts import Template
from megazoo.tasks.bias.scoring import ScoreCache, score_prompts
from megazoo.tasks.bias.selection import check_support, embed_texts, select


class Repository:
    """The labelled support posts and (with an embedder) their embeddings."""

    def __init__(self, posts: Sequence[Post], embedder=None, vectors: np.ndarray | None = None):
        self.posts = list(posts)
        self.embedder = embedder
        if vectors is None and embedder is not None:
            vectors = embed_texts([p.text for p in self.posts], embedder)
        self.vectors = vectors
        self.labels = [p.label for p in self.posts]

    def subset(self, indices: Sequence[int]) -> "Repository":
        vecs = self.vectors[list(indices)] if self.vectors is not None else None
        return Repository([self.posts[i] for i in indices], self.embedder, vecs)

    def embed(self, texts: Sequence[str]) -> np.ndarray | None:
        return embed_texts(texts, self.embedder) if self.embedder is not None else None


def build_prompts(template: Template, queries: Sequence[Post], support: Repository, shots: int,
                  selection: str = "knn", seed: int = 0, query_vecs: np.ndarray | None = None) -> list[str]:
    """One prompt per query with its exemplars from `support` (never the query's own text)."""
    check_support(support.labels, shots, selection)
    if shots and selection == "knn":
        if support.vectors is None:
            raise ValueError("knn selection needs an embedder for the support posts")
        if query_vecs is None:
            query_vecs = support.embed([q.text for q in queries])
    where = {p.text: i for i, p in enumerate(support.posts)}
    exclude = [where.get(q.text) for q in queries]
    chosen = select(query_vecs if selection == "knn" else None, support.vectors, support.labels, shots,
                    selection, seed, exclude)
    return [template.prompt(q.text, [(support.posts[i].text, support.posts[i].label) for i in idx])
            for q, idx in zip(queries, chosen)]


def score_posts(lm, template: Template, queries: Sequence[Post], support: Repository, shots: int,
                selection: str = "knn", seed: int = 0, cache: ScoreCache | None = None, batch_size: int = 8,
                progress: bool = False, query_vecs: np.ndarray | None = None) -> list[float]:
    prompts = build_prompts(template, queries, support, shots, selection, seed, query_vecs)
    return score_prompts(lm, prompts, template.yes, template.no, batch_size, progress, cache)


def evaluate_posts(lm, test: Sequence[Post], support: Repository, template: Template, shots: int = 8,
                   selection: str = "knn", seed: int = 0, dev: Sequence[Post] | None = None,
                   cache: ScoreCache | None = None, batch_size: int = 8, progress: bool = False,
                   samples: int = 1000, query_vecs: np.ndarray | None = None) -> dict:
    """{"n", "metrics", "ci", "threshold", "predictions": [{"id", "post", "label", "score"}]} on `test`."""
    scores = score_posts(lm, template, test, support, shots, selection, seed, cache, batch_size, progress,
                         query_vecs)
    labels = [p.label for p in test]
    threshold = None
    if dev:
        dev_scores = score_posts(lm, template, dev, support, shots, selection, seed, cache, batch_size, progress)
        threshold = tune_threshold([p.label for p in dev], dev_scores)
    summary = summarise(labels, scores, threshold, samples=samples, seed=seed)
    return {"n": len(test), **summary, "threshold": threshold,
            "predictions": prediction_rows(test, scores)}
