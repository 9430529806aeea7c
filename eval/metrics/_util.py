"""Small input checks shared by the metric modules."""
from __future__ import annotations

from typing import Sequence


def check_pairs(predictions: Sequence, references: Sequence, allow_empty: bool = False) -> None:
    """Raise ValueError unless predictions and references pair up (and, by default, are non-empty)."""
    if len(predictions) != len(references):
        raise ValueError(
            f"{len(predictions)} predictions but {len(references)} references; they must pair up"
        )
    if not allow_empty and len(predictions) == 0:
        raise ValueError("no predictions to score")
