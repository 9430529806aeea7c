"""Hugging Face ``evaluate`` metric scripts for megazoo's metrics, loadable offline.

Each folder holds one script named like the folder, so ``evaluate.load(module_path("squad"))``
loads it from disk (hub names such as ``evaluate.load("squad")`` fetch scripts and fail offline).
The scripts are a few lines each: every metric is one row of ``table.SPECS`` (its inputs, its
description and the plain function in ``megazoo.eval.metrics`` it calls, so both give the same
numbers). A new metric is a row there, a name here and a folder with a copy of any script.
"""
from __future__ import annotations

import os

# kept here, not read from table.py, so that module_path() needs neither evaluate nor datasets
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
