"""`train.trainable`: which parameters a run trains (all, or those matching name patterns)."""

from __future__ import annotations


def apply_trainable(chunks, trainable="all") -> list[str]:
    """Freeze every parameter of `chunks` whose name matches none of the patterns; return the
    names left trainable. "all" (the default) trains everything."""
    if trainable in (None, "all"):
        return [n for c in chunks for n, _ in c.named_parameters()]
    raise NotImplementedError("train.trainable patterns")
