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

import json
import os
from pathlib import Path
from typing import Sequence

import torch

from megazoo.core.fs import write_json_atomic as _write_json
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


def predictions_path(out: str | os.PathLike) -> Path:
    """FILE.json -> FILE.predictions.json (the predictions beside a summary)."""
    out = Path(out)
    stem = out.name[:-len(".json")] if out.name.endswith(".json") else out.name
    return out.with_name(stem + ".predictions.json")


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
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not a JSON predictions file ({err})") from None


def read_predictions(path: str | os.PathLike) -> dict:
    """A predictions file, or the summary FILE.json of one (its FILE.predictions.json is read)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such predictions file (write one with `megazoo task race evaluate --out`)")
    obj = _load_json(path)
    if isinstance(obj, dict) and "metrics" in obj and not isinstance(obj.get("predictions"), list):
        name = obj.get("predictions")
        beside = path.with_name(name) if isinstance(name, str) else predictions_path(path)
        if not beside.is_file():
            raise FileNotFoundError(f"{path}: a summary whose predictions file {beside} is missing")
        path, obj = beside, _load_json(beside)
    rows = obj.get("predictions") if isinstance(obj, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{path}: no 'predictions' list; expected the output of `megazoo task race evaluate --out`")
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not all(k in r for k in ("uid", "label", "probs")) \
                or not isinstance(r["probs"], list) or len(r["probs"]) != NUM_CHOICES:
            raise ValueError(f"{path}: prediction {i} needs 'uid', 'label' and 'probs' with {NUM_CHOICES} numbers")
    return obj


def ensemble(paths: Sequence[str | os.PathLike]) -> dict:
    """Average the softmaxes of several predictions files (or their summaries) over the same
    questions; returns the ensemble's predictions record."""
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
