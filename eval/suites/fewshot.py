"""Few-shot example sampling: a fresh draw for every question, as GPT-3, MT-NLG and lm-eval do.

One draw reused for all questions would make the whole score hinge on k particular examples. Each
question gets its own generator, seeded by (seed, question index), so a question's shots do not
depend on which other questions are evaluated (a `--limit` run sees the same shots for its
questions as a full run) and are the same across runs and machines.
"""

from __future__ import annotations

import os
import random


def same_split(path, fewshot_path) -> bool:
    """Whether the shots come from the evaluated file itself (then a question never shows itself)."""
    if fewshot_path is None:
        return True
    try:
        return os.path.samefile(path, fewshot_path)
    except OSError:
        return os.path.abspath(path) == os.path.abspath(fewshot_path)


def shot_indices(pool_size: int, k: int, seed: int, question: int, exclude_question: bool) -> list[int]:
    """k distinct indices into a pool of `pool_size` examples for question number `question`.

    With `exclude_question` (shots from the same split) index `question` is never drawn: sample
    from the pool_size - 1 others and shift the indices at or after the question up by one.
    """
    available = pool_size - 1 if exclude_question else pool_size
    if k > available:
        where = "other examples in the evaluated file" if exclude_question else "examples in the few-shot file"
        raise ValueError(f"asked for {k} few-shot examples but there are only {available} {where}")
    # a string seed is hashed with SHA-512 by `random`, so it is stable across runs and platforms
    rng = random.Random(f"megazoo-fewshot/{seed}/{question}")
    picks = rng.sample(range(available), k)
    if exclude_question:
        picks = [j + 1 if j >= question else j for j in picks]
    return picks


def draw_shots(pool: list, k: int, num_questions: int, seed: int, exclude_question: bool) -> list[list]:
    """For each of the first `num_questions` questions, its own k examples from `pool`."""
    return [[pool[j] for j in shot_indices(len(pool), k, seed, i, exclude_question)] for i in range(num_questions)]
