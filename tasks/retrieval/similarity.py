"""How the bi-encoder compares a question with a passage (task.similarity): "dot", the inner product
of the pooled vectors, or "cosine", the inner product of their L2-normalised versions (what
sentence-transformers train MiniLM with). Training scores and the vectors `index`/`evaluate` store
go through `as_similarity`, so a faiss inner-product index searches by the run's own similarity.
Kept free of a torch import at module level: the CLIs read SIMILARITIES for their choices."""

from __future__ import annotations

SIMILARITIES = ("dot", "cosine")


def as_similarity(vectors, similarity: str):
    """`vectors` [..., h] as the inner product of `similarity` wants them (unit length for cosine)."""
    if similarity == "cosine":
        import torch.nn.functional as F

        return F.normalize(vectors, dim=-1)
    return vectors
