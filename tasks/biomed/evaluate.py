"""The paper's metrics for the three tasks, and the files the evaluate stage writes.

    ner  precision, recall, f1: entity-level micro averages, exact span and type (seqeval's
         default mode; megazoo.eval.metrics.ner_scores, tested equal to seqeval)
    re   precision, recall, f1: micro over CPR:3, CPR:4, CPR:5, CPR:6, CPR:9; `false` is excluded
    qa   strict_accuracy (top-1 is a gold synonym, case-insensitive), lenient_accuracy (a gold
         synonym in the top 5), mrr (1 / rank of the first correct answer in the top 5, else 0)

`evaluate --out FILE.json` writes, through the task-evaluation kit (eval/taskkit.py), FILE.json,
{"task": "biomed", "n", "metrics", "predictions": NAME, "kind", "data", "checkpoint", "step"}, and
the predictions beside it in each kind's usual format:
    ner  FILE.predictions.txt   CoNLL columns `token gold pred`, a blank line between sentences
    re   FILE.predictions.tsv   `id<TAB>gold<TAB>pred`
    qa   FILE.predictions.json  [{"id", "answers": [ranked texts], "scores": [...], "gold": [...]}]

A BioASQ test batch scored per question (`--golden`, bioasq.py) writes the same two files, n the
golden file's factoid questions, plus n_questions, n_skipped (its list, yesno and summary
questions) and n_without_prediction in FILE.json; the predictions are one row per question,
[{"id", "answers": [top 5], "scores": [summed probabilities], "gold": [synonyms]}].
"""

from __future__ import annotations

import os
from pathlib import Path

from megazoo.eval.metrics import bioasq_factoid_scores, chemprot_scores, ner_scores

METRICS = {"ner": ("precision", "recall", "f1"), "re": ("precision", "recall", "f1"),
           "qa": ("strict_accuracy", "lenient_accuracy", "mrr")}
HEADLINE = {"ner": "f1", "re": "f1", "qa": "strict_accuracy"}
FORMATS = {"ner": ".txt", "re": ".tsv", "qa": ".json"}  # each kind's predictions file: FILE.predictions.EXT


def ner_metrics(predictions: list[list[str]], references: list[list[str]]) -> dict:
    scores = ner_scores(predictions, references)
    return {k: scores[k] for k in METRICS["ner"]}


def re_metrics(predictions: list[str], references: list[str]) -> dict:
    return chemprot_scores(predictions, references)


def qa_metrics(predictions: list[list[str]], references: list[list[str]]) -> dict:
    return bioasq_factoid_scores(predictions, references, top_k=5)


def every_predictions_path(out: str | os.PathLike) -> list[Path]:
    """The predictions files of every kind beside `out`: what the parser declares, before --kind
    is known (an output must never replace one of them unasked, nor an input of that name)."""
    from megazoo.eval.taskkit import predictions_path

    return [predictions_path(out, ext) for ext in FORMATS.values()]


def predictions_content(kind: str, examples: list, predictions: list):
    """The predictions file of `kind` (see the module doc): text for ner and re, the rows for qa."""
    if kind == "ner":
        blocks = ["\n".join(f"{t} {g} {p}" for t, g, p in zip(x.tokens, x.labels, pred)) + "\n"
                  for x, pred in zip(examples, predictions)]
        return "\n".join(blocks)
    if kind == "re":
        return "".join(f"{x.id}\t{x.label}\t{p}\n" for x, p in zip(examples, predictions))
    return [{"id": x.id, "answers": [a["text"] for a in p], "scores": [a["score"] for a in p],
             "gold": list(x.answers)} for x, p in zip(examples, predictions)]


def write_evaluation(out: str | os.PathLike, kind: str, examples: list, predictions: list, metrics: dict,
                     **meta) -> tuple[Path, Path]:
    """Write the predictions file, then the summary (the kit writes each atomically, the summary
    last, so a summary always has its predictions). Returns (summary, predictions) paths."""
    from megazoo.eval.taskkit import write_evaluation as write_files

    Path(out).parent.mkdir(parents=True, exist_ok=True)
    return write_files(out, "biomed", len(examples), metrics, predictions_content(kind, examples, predictions),
                       ext=FORMATS[kind], kind=kind, **meta)


def write_question_evaluation(out: str | os.PathLike, scores, **meta) -> tuple[Path, Path]:
    """write_evaluation for a BioASQ batch scored per question (`scores`: bioasq.QuestionScores)."""
    from megazoo.eval.taskkit import write_evaluation as write_files

    Path(out).parent.mkdir(parents=True, exist_ok=True)
    return write_files(out, "biomed", scores.n_questions, scores.metrics, scores.rows, ext=FORMATS["qa"], kind="qa",
                       n_questions=scores.n_questions, n_skipped=scores.n_skipped,
                       n_without_prediction=scores.n_without_prediction, **meta)
