"""BM25 with the `bm25s` library: hard negatives for supervised training (DPR mined its hard
negatives with BM25: top passages that do not contain the answer) and the sparse baseline.

    bm = BM25Index(texts)                       # tokenised with English stop words removed
    rows, scores = bm.search(queries, k)        # [q, k] best first
    negatives = mine_hard_negatives(questions, pool, n)
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from megazoo.eval.metrics import has_answer


class BM25Index:
    def __init__(self, texts: Sequence[str]):
        import bm25s

        self.bm25s = bm25s
        self.size = len(texts)
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False)

    def search(self, queries: Sequence[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        k = min(k, self.size)
        tokens = self.bm25s.tokenize(list(queries), stopwords="en", return_ids=False, show_progress=False)
        rows, scores = self.retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return np.asarray(rows), np.asarray(scores)


def mine_hard_negatives(questions, pool: Sequence[dict], n: int, depth: int = 30) -> list[list[dict]]:
    """For each question (data.Question) the first `n` BM25 passages of `pool` ({title, text})
    that contain none of its answers and are not its positive; fewer when the pool runs out."""
    if n <= 0 or not questions:
        return [[] for _ in questions]
    bm = BM25Index([f"{p['title']} {p['text']}" for p in pool])
    rows, _ = bm.search([q.question for q in questions], depth + n)
    out = []
    for q, ranked in zip(questions, rows):
        positives = {(p["title"], p["text"]) for p in q.positives}
        found = []
        for r in ranked:
            p = pool[int(r)]
            if (p["title"], p["text"]) in positives or has_answer(q.answers, p["text"]):
                continue
            found.append(p)
            if len(found) == n:
                break
        out.append(found)
    return out
