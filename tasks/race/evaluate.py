"""RACE accuracy (overall, middle, high), the evaluate stage's files and the ensemble of several of them.

`evaluate --out FILE.json` (and `ensemble --out FILE.json`) write two files through the
task-evaluation kit (eval/taskkit.py write_evaluation, DESIGN.md 3.5):
  FILE.json                    {"task": "race", "n", "metrics": {"accuracy", "accuracy_middle",
                                "accuracy_high"}, "predictions": NAME, "counts", "data", "split",
                                "checkpoint", "step"} (a level without questions has no metric)
  FILE.predictions.jsonl       one line a question: {"uid", "level", "label", "prediction", "probs": [4]}
`probs` is the softmax over the 4 options. The ensemble averages the softmaxes of several
evaluations question by question (Megatron's ensemble_classifier) and takes the argmax; it takes
either file of a pair (a summary leads to the predictions file beside it), and the one-object
FILE.predictions.json that earlier versions wrote.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Sequence

import torch

from megazoo.core.fs import inside
from megazoo.eval.metrics import accuracy
from megazoo.eval.readers.common import MissingFile
from megazoo.eval.taskkit import predictions_path
from megazoo.tasks.race.data import LEVELS, NUM_CHOICES
from megazoo.tasks.race.files import PREDICTIONS, read_json


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


def summary_record(record: dict) -> dict:
    """The evaluation summary of a predictions record (the kit's evaluation_record): the metric
    names of the task's issue (a level without questions left out: its count says 0), n, the counts
    per level and where the record came from (data, split, checkpoint, step, members)."""
    from megazoo.eval.taskkit import evaluation_record

    metrics = {k: v for k, v in race_metrics(record["accuracy"]).items() if v is not None}
    extra = {k: v for k, v in record.items() if k not in ("task", "accuracy", "counts", "predictions")}
    return evaluation_record("race", record["counts"]["overall"], metrics, counts=record["counts"], **extra)


def write_evaluation(out: str | os.PathLike, record: dict) -> tuple[Path, Path]:
    """Write FILE.predictions.jsonl, then the summary FILE.json (the kit writes each atomically,
    the summary last). Returns (summary, predictions) paths."""
    from megazoo.eval.taskkit import write_evaluation as write_files

    Path(out).parent.mkdir(parents=True, exist_ok=True)
    summary = summary_record(record)
    task, n, metrics = summary.pop("task"), summary.pop("n"), summary.pop("metrics")
    return write_files(out, task, n, metrics, record["predictions"], ext=PREDICTIONS, **summary)


def locate_predictions(path: str | os.PathLike) -> tuple[Path, dict]:
    """(the predictions file to read, the summary that led to it or {}): `path` itself, or for a
    summary FILE.json the predictions file it names beside it."""
    path = Path(path)
    if not path.is_file():
        raise MissingFile(f"{path}: no such predictions file (write one with `megazoo task race evaluate --out`)")
    if path.suffix == ".jsonl":
        return path, {}
    obj = read_json(path, "a JSON predictions file")
    if isinstance(obj, dict) and "metrics" in obj and not isinstance(obj.get("predictions"), list):
        name = obj.get("predictions")
        if name is not None and not (isinstance(name, str) and inside(path.parent, name)):
            # a summary names a file beside it, nothing else: no folder part, no `..`, no link out
            raise ValueError(f"{path}: 'predictions' names {name!r}, not a file beside the summary; give the "
                             f"predictions file itself")
        beside = path.with_name(name) if name else predictions_path(path, PREDICTIONS)
        if not beside.is_file():
            raise MissingFile(f"{path}: a summary whose predictions file {beside} is missing")
        return beside, obj
    return path, {}


def _rows(path: Path) -> tuple[list[tuple[str, object]], dict]:
    """((where, row) for each prediction, the fields beside the rows): JSON lines, or the one JSON
    object of earlier versions holding its rows under "predictions" (and data, split beside them)."""
    if path.suffix == ".jsonl":
        from megazoo.eval.readers.common import LineError, read_jsonl

        rows = [(f"{path}:{line}", row) for line, row in read_jsonl(path, "RACE predictions", LineError)]
        return rows, {}
    obj = read_json(path, "a JSON predictions file")
    rows = obj.get("predictions") if isinstance(obj, dict) else None
    if not isinstance(rows, list):
        return [], {}
    return [(f"{path}: prediction {i}", r) for i, r in enumerate(rows)], obj


def read_predictions(path: str | os.PathLike) -> dict:
    """{"predictions": rows, "data", "split"} of an evaluation: its summary FILE.json (its
    FILE.predictions.jsonl is read), the predictions file itself, or an earlier one-object file."""
    file, summary = locate_predictions(path)
    rows, fields = _rows(file)
    if not rows:
        raise ValueError(f"{file}: no predictions; expected the output of `megazoo task race evaluate --out`")
    seen = set()
    for where, r in rows:
        if not isinstance(r, dict) or not all(k in r for k in ("uid", "label", "probs")) \
                or not isinstance(r["probs"], list) or len(r["probs"]) != NUM_CHOICES \
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                           for x in r["probs"]):
            raise ValueError(f"{where}: a prediction needs 'uid', 'label' and 'probs' with {NUM_CHOICES} finite "
                             f"numbers")
        if not isinstance(r["uid"], str):
            raise ValueError(f"{where}: 'uid' must be a string, got {r['uid']!r:.40}")
        if r["uid"] in seen:  # a second row would silently replace the first in the ensemble
            raise ValueError(f"{file}: question {r['uid']!r} is predicted twice; each question once")
        seen.add(r["uid"])
    info = {**fields, **summary}
    return {"predictions": [r for _, r in rows], "data": info.get("data"), "split": info.get("split")}


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
