"""The paper's metrics for the three tasks, and the files the evaluate stage writes.

    ner  precision, recall, f1: entity-level micro averages, exact span and type (seqeval's
         default mode; megazoo.eval.metrics.ner_scores, tested equal to seqeval)
    re   precision, recall, f1: micro over CPR:3, CPR:4, CPR:5, CPR:6, CPR:9; `false` is excluded
    qa   strict_accuracy (top-1 is a gold synonym, case-insensitive), lenient_accuracy (a gold
         synonym in the top 5), mrr (1 / rank of the first correct answer in the top 5, else 0)

`evaluate --out FILE.json` writes FILE.json, {"task": "biomed", "kind", "n", "metrics", "data",
"checkpoint", "predictions": NAME}, and the predictions beside it:
    ner  FILE.predictions.txt   CoNLL columns `token gold pred`, a blank line between sentences
    re   FILE.predictions.tsv   `id<TAB>gold<TAB>pred`
    qa   FILE.predictions.json  [{"id", "answers": [ranked texts], "scores": [...], "gold": [...]}]
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from megazoo.core.fs import write_json_atomic, write_text_atomic
from megazoo.eval.metrics import bioasq_factoid_scores, chemprot_scores, ner_scores

METRICS = {"ner": ("precision", "recall", "f1"), "re": ("precision", "recall", "f1"),
           "qa": ("strict_accuracy", "lenient_accuracy", "mrr")}
HEADLINE = {"ner": "f1", "re": "f1", "qa": "strict_accuracy"}
SUFFIX = {"ner": ".predictions.txt", "re": ".predictions.tsv", "qa": ".predictions.json"}


def ner_metrics(predictions: list[list[str]], references: list[list[str]]) -> dict:
    scores = ner_scores(predictions, references)
    return {k: scores[k] for k in METRICS["ner"]}


def re_metrics(predictions: list[str], references: list[str]) -> dict:
    return chemprot_scores(predictions, references)


def qa_metrics(predictions: list[list[str]], references: list[list[str]]) -> dict:
    return bioasq_factoid_scores(predictions, references, top_k=5)


def predictions_path(out: str | os.PathLike, kind: str) -> Path:
    out = Path(out)
    stem = out.name[:-len(".json")] if out.name.endswith(".json") else out.name
    return out.with_name(stem + SUFFIX[kind])


def every_predictions_path(out: str | os.PathLike) -> list[Path]:
    """The predictions files of every kind beside `out`: what the parser declares, before --kind
    is known (an output must never replace one of them unasked, nor an input of that name)."""
    return [predictions_path(out, kind) for kind in SUFFIX]


def predictions_text(kind: str, examples: list, predictions: list) -> str:
    """The predictions file of `kind` (see the module doc)."""
    if kind == "ner":
        blocks = ["\n".join(f"{t} {g} {p}" for t, g, p in zip(x.tokens, x.labels, pred)) + "\n"
                  for x, pred in zip(examples, predictions)]
        return "\n".join(blocks)
    if kind == "re":
        return "".join(f"{x.id}\t{x.label}\t{p}\n" for x, p in zip(examples, predictions))
    rows = [{"id": x.id, "answers": [a["text"] for a in p], "scores": [a["score"] for a in p],
             "gold": list(x.answers)} for x, p in zip(examples, predictions)]
    return json.dumps(rows, indent=1) + "\n"


def write_evaluation(out: str | os.PathLike, kind: str, examples: list, predictions: list, metrics: dict,
                     **meta) -> tuple[Path, Path]:
    """Write the predictions file, then the summary (so a summary always has its predictions)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pred = predictions_path(out, kind)
    write_text_atomic(pred, predictions_text(kind, examples, predictions))
    write_json_atomic(out, {"task": "biomed", "kind": kind, "n": len(examples), "metrics": metrics, **meta,
                            "predictions": pred.name})
    return out, pred
