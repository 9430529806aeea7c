"""Scoring generations and turning their scores into the paper's metrics (evaluate and score stages)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def fill_scores(records: list[dict], scorer, cache) -> list[float]:
    """Each record's toxicity: its own `score` when it has one (a number, or Megatron's
    {"toxicity": x, ...} annotation), else the scorer's (-1 for an empty text); written back into
    the records."""
    from megazoo.tasks.detox.scorers import score_texts

    scores: list[float | None] = [given_score(r) for r in records]
    todo = [i for i, s in enumerate(scores) if s is None]
    if todo:
        if scorer is None:
            raise ValueError(f"{len(todo)} generations have no score; give --scorer")
        for i, s in zip(todo, score_texts(scorer, [records[i]["text"] for i in todo], cache)):
            scores[i] = s
    for r, s in zip(records, scores):
        r["score"] = s
    return scores


def given_score(record: dict) -> float | None:
    s = record.get("score")
    if isinstance(s, dict):
        s = s.get("toxicity")
    return float(s) if isinstance(s, (int, float)) and not isinstance(s, bool) else None


def write_records(path, records: list[dict]) -> Path:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, path)
    return path


def report(metrics: dict) -> str:
    parts = []
    for subset in ("full", "toxic", "nontoxic"):
        m = metrics[subset]
        if m["n"]:
            parts.append(f"{subset}: EMT {m['emt']:.3f} +- {m['emt_std']:.3f}  TP {m['tp']:.3f}  ({m['n']} prompts)")
    return "\n".join(parts)
