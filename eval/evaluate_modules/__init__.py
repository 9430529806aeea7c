"""Hugging Face ``evaluate`` metric scripts for megazoo's metrics, loadable offline.

Each folder holds one script named like the folder, so ``evaluate.load(module_path("squad"))``
loads it from disk (hub names such as ``evaluate.load("squad")`` fetch scripts and fail offline).
Every script only converts its inputs and calls the plain function in ``megazoo.eval.metrics``,
so both give the same numbers.
"""
from __future__ import annotations

import os

MODULES: tuple[str, ...] = (
    "accuracy",
    "bioasq_factoid",
    "bleu",
    "chemprot",
    "dialogue_f1",
    "diversity",
    "dpr_top_k",
    "ner",
    "perplexity",
    "roc_auc",
    "rouge_l",
    "squad",
    "toxicity",
    "wikitext_perplexity",
)


def module_path(name: str) -> str:
    """The folder to pass to ``evaluate.load`` for the metric ``name`` (one of ``MODULES``)."""
    if name not in MODULES:
        raise ValueError(f"unknown megazoo evaluate module {name!r}; choose one of {', '.join(MODULES)}")
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), name)


def load(name: str, **kwargs):
    """``evaluate.load(module_path(name), **kwargs)``."""
    import evaluate

    return evaluate.load(module_path(name), **kwargs)
