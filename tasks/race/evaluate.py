"""RACE accuracy (overall, middle, high), predictions files and the ensemble of several of them.

`evaluate --out FILE.json` (and `ensemble --out FILE.json`) write two files (DESIGN.md 3.5):
  FILE.json              {"task": "race", "n", "metrics": {"accuracy", "accuracy_middle",
                          "accuracy_high"}, "counts", "data", "split", "checkpoint", "predictions": NAME}
  FILE.predictions.json  {"task": "race", "data", "split", "checkpoint", "accuracy": {"overall",
                          "middle", "high"}, "counts", "predictions": [{"uid", "level", "label",
                          "prediction", "probs": [4]}]}
`probs` is the softmax over the 4 options. The ensemble averages the softmaxes of several
predictions files question by question (Megatron's ensemble_classifier) and takes the argmax; it
takes either file of a pair (a summary leads to the predictions file beside it).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Sequence

import torch

from megazoo.core.fs import inside
from megazoo.core.fs import write_json_atomic as _write_json
from megazoo.eval.metrics import accuracy
from megazoo.tasks.race.data import LEVELS, NUM_CHOICES
from megazoo.tasks.race.files import MissingFile, predictions_path, read_json


def race_accuracy(predictions: Sequence[int], labels: Sequence[int], levels: Sequence[str]) -> dict:
    """{"overall", "middle", "high"}: accuracy pooled and per level (None where a level has no questions)."""
    if not predictions:
        raise ValueError("no questions to score")
    out = {"overall": accuracy(list(predictions), list(labels))}
    for level in LEVELS:
        idx = [i for i, lv in enumerate(levels) if lv == level]
        out[level] = accuracy([predictions[i] for i in idx], [labels[i] for i in idx]) if idx else None
    return out


METRICS = ("accuracy", "accuracy_middle", "accuracy_high")  # the names issue and leaderboard use


def race_metrics(acc: dict) -> dict:
    """race_accuracy's {"overall", "middle", "high"} under the metric names of METRICS."""
    return dict(zip(METRICS, (acc["overall"], acc["middle"], acc["high"])))


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
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    _write_json(path, obj)


def summary_record(record: dict, predictions_file: str | os.PathLike | None = None) -> dict:
    """The summary of a predictions record: the metric names of the task's issue, with n."""
    acc = record["accuracy"]
    out = {"task": "race", "n": record["counts"]["overall"],
           "metrics": race_metrics(acc),
           "counts": record["counts"]}
    out.update({k: v for k, v in record.items() if k not in ("task", "accuracy", "counts", "predictions")})
    if predictions_file is not None:
        out["predictions"] = Path(predictions_file).name
    return out


def write_evaluation(out: str | os.PathLike, record: dict) -> tuple[Path, Path]:
    """Write FILE.predictions.json, then the summary FILE.json (each atomically; the summary
    last, so a summary always has its complete predictions beside it)."""
    pred = predictions_path(out)
    write_json_atomic(pred, record)
    write_json_atomic(out, summary_record(record, pred))
    return Path(out), pred


def _load_json(path: Path) -> dict:
    return read_json(path, "a JSON predictions file")


def locate_predictions(path: str | os.PathLike) -> tuple[Path, object]:
    """(the file whose predictions are read, its JSON): `path` itself, or for a summary FILE.json
    the predictions file it names beside it."""
    path = Path(path)
    if not path.is_file():
        raise MissingFile(f"{path}: no such predictions file (write one with `megazoo task race evaluate --out`)")
    obj = _load_json(path)
    if isinstance(obj, dict) and "metrics" in obj and not isinstance(obj.get("predictions"), list):
        name = obj.get("predictions")
        if name is not None and not (isinstance(name, str) and inside(path.parent, name)):
            # a summary names a file beside it, nothing else: no folder part, no `..`, no link out
            raise ValueError(f"{path}: 'predictions' names {name!r}, not a file beside the summary; give the "
                             f"predictions file itself")
        beside = path.with_name(name) if name else predictions_path(path)
        if not beside.is_file():
            raise MissingFile(f"{path}: a summary whose predictions file {beside} is missing")
        return beside, _load_json(beside)
    return path, obj


def read_predictions(path: str | os.PathLike) -> dict:
    """A predictions file, or the summary FILE.json of one (its FILE.predictions.json is read)."""
    path, obj = locate_predictions(path)
    rows = obj.get("predictions") if isinstance(obj, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{path}: no 'predictions' list; expected the output of `megazoo task race evaluate --out`")
    seen = set()
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not all(k in r for k in ("uid", "label", "probs")) \
                or not isinstance(r["probs"], list) or len(r["probs"]) != NUM_CHOICES \
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                           for x in r["probs"]):
            raise ValueError(f"{path}: prediction {i} needs 'uid', 'label' and 'probs' with {NUM_CHOICES} finite "
                             f"numbers")
        if not isinstance(r["uid"], str):
            raise ValueError(f"{path}: prediction {i}'s 'uid' must be a string, got {r['uid']!r:.40}")
        if r["uid"] in seen:  # a second row would silently replace the first in the ensemble
            raise ValueError(f"{path}: question {r['uid']!r} is predicted twice; each question once")
        seen.add(r["uid"])
    return obj


def ensemble(paths: Sequence[str | os.PathLike]) -> dict:
    """Average the softmaxes of several predictions files (or their summaries) over the same
    questions; returns the ensemble's predictions record. Files over other questions (some
    missing, some extra) or other labels are refused, naming both files."""
    if len(paths) < 1:
        raise ValueError("the ensemble needs at least one predictions file")
    files = [read_predictions(p) for p in paths]
    first = {r["uid"]: r for r in files[0]["predictions"]}
    total = {uid: torch.tensor(r["probs"], dtype=torch.float64) for uid, r in first.items()}
    for path, obj in zip(paths[1:], files[1:]):
        rows = {r["uid"]: r for r in obj["predictions"]}
        if rows.keys() != first.keys():
            extra, lacking = sorted(rows.keys() - first.keys()), sorted(first.keys() - rows.keys())
            parts = ([f"{len(extra)} questions not in {paths[0]} (e.g. {extra[0]!r})"] if extra else []) + \
                    ([f"lacks {len(lacking)} of its questions (e.g. {lacking[0]!r})"] if lacking else [])
            raise ValueError(f"{path}: its questions differ from {paths[0]}'s: {'; '.join(parts)}; an ensemble "
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
