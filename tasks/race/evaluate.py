"""RACE accuracy (overall, middle, high), predictions files and the ensemble of several of them.

A predictions file is JSON:
  {"task": "race", "data": ..., "split": ..., "checkpoint": ..., "accuracy": {"overall", "middle",
   "high"}, "counts": {...}, "predictions": [{"uid", "level", "label", "prediction", "probs": [4]}]}
`probs` is the softmax over the 4 options. The ensemble averages the softmaxes of several files
question by question (Megatron's ensemble_classifier) and takes the argmax.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import torch

from megazoo.eval.metrics import accuracy
from megazoo.tasks.race.data import LEVELS, NUM_CHOICES


def race_accuracy(predictions: Sequence[int], labels: Sequence[int], levels: Sequence[str]) -> dict:
    """{"overall", "middle", "high"}: accuracy pooled and per level (None where a level has no questions)."""
    if not predictions:
        raise ValueError("no questions to score")
    out = {"overall": accuracy(list(predictions), list(labels))}
    for level in LEVELS:
        idx = [i for i, lv in enumerate(levels) if lv == level]
        out[level] = accuracy([predictions[i] for i in idx], [labels[i] for i in idx]) if idx else None
    return out


def predictions_record(uids, levels, labels, probs: torch.Tensor, **meta) -> dict:
    """Build the predictions JSON object from [N, 4] softmax probabilities."""
    probs = probs.double()
    preds = probs.argmax(-1).tolist()
    labels = [int(x) for x in labels]
    rows = [{"uid": u, "level": lv, "label": y, "prediction": p, "probs": [float(x) for x in pr]}
            for u, lv, y, p, pr in zip(uids, levels, labels, preds, probs.tolist())]
    counts = {"overall": len(rows), **{lv: sum(r["level"] == lv for r in rows) for lv in LEVELS}}
    return {"task": "race", **meta, "accuracy": race_accuracy(preds, labels, list(levels)), "counts": counts,
            "predictions": rows}


def write_json_atomic(path: str | os.PathLike, obj: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_predictions(path: str | os.PathLike) -> dict:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such predictions file (write one with `megazoo task race evaluate --out`)")
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not a JSON predictions file ({err})") from None
    rows = obj.get("predictions") if isinstance(obj, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{path}: no 'predictions' list; expected the output of `megazoo task race evaluate --out`")
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not all(k in r for k in ("uid", "label", "probs")) \
                or not isinstance(r["probs"], list) or len(r["probs"]) != NUM_CHOICES:
            raise ValueError(f"{path}: prediction {i} needs 'uid', 'label' and 'probs' with {NUM_CHOICES} numbers")
    return obj


def ensemble(paths: Sequence[str | os.PathLike]) -> dict:
    """Average the softmaxes of several predictions files over the same questions."""
    if len(paths) < 1:
        raise ValueError("the ensemble needs at least one predictions file")
    files = [read_predictions(p) for p in paths]
    first = {r["uid"]: r for r in files[0]["predictions"]}
    total = {uid: torch.tensor(r["probs"], dtype=torch.float64) for uid, r in first.items()}
    for path, obj in zip(paths[1:], files[1:]):
        rows = {r["uid"]: r for r in obj["predictions"]}
        if rows.keys() != first.keys():
            diff = sorted(rows.keys() ^ first.keys())
            raise ValueError(f"{path}: its questions differ from {paths[0]}'s (e.g. {diff[0]!r}); an ensemble "
                             f"averages predictions over the same data split")
        for uid, r in rows.items():
            if r["label"] != first[uid]["label"]:
                raise ValueError(f"{path}: question {uid!r} has label {r['label']}, {paths[0]} says "
                                 f"{first[uid]['label']}; the files come from different data")
            total[uid] += torch.tensor(r["probs"], dtype=torch.float64)
    uids = list(first)
    probs = torch.stack([total[u] for u in uids]) / len(files)
    return predictions_record(uids, [first[u].get("level", "") for u in uids], [first[u]["label"] for u in uids],
                              probs, members=[str(p) for p in paths], split=files[0].get("split"),
                              data=files[0].get("data"))


def format_accuracy(acc: dict, counts: dict | None = None) -> str:
    parts = []
    for key in ("overall", "middle", "high"):
        if acc.get(key) is not None:
            n = f" (n={counts[key]})" if counts else ""
            parts.append(f"{key} {acc[key]:.4f}{n}")
    return "accuracy: " + ", ".join(parts)
