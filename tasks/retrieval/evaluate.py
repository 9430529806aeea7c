"""Top-k retrieval accuracy as DPR computes it: the metric is megazoo.eval.metrics (retrieval.py:
`has_answer` with DPR's SimpleTokenizer or `regex` patterns, `top_k_accuracy` as fractions under
the keys top1, top5, ...); this module keeps the task's pieces around it: the default cut-offs,
the hits of one question's ranked passages and the --top-k parser.
"""

from __future__ import annotations

from typing import Sequence

from megazoo.eval.metrics import MATCHES, has_answer, top_k_accuracy
from megazoo.eval.metrics import simple_tokenize as simple_tokens

KS = (1, 5, 20, 100)

__all__ = ["KS", "MATCHES", "has_answer", "hits", "parse_ks", "simple_tokens", "top_k_accuracy"]


def hits(answers: Sequence[str], ranked_texts: Sequence[str], match: str = "string") -> list[bool]:
    """has_answer for each ranked passage of one question."""
    return [has_answer(answers, t, match) for t in ranked_texts]


def parse_ks(text: str, most: int = 100_000) -> tuple[int, ...]:
    """'1,5,20,100' -> (1, 5, 20, 100); each k an integer in [1, most]."""
    usage = f"--top-k {text!r}: expected comma-separated positive integers up to {most} such as 1,5,20,100"
    try:
        ks = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(usage) from None
    if not ks or min(ks) < 1 or max(ks) > most:
        raise ValueError(usage)
    return ks
