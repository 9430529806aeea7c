"""The evaluate stage: a QA checkpoint's answers on a SQuAD dev file, scored as the official
script scores them (score.py; v2.0 when the file is). Written by the task-evaluation kit
(eval/taskkit.write_evaluation): FILE.json {"task", "n", "metrics", "predictions", "counts",
"missing", "version", "data", "checkpoint"} and the predictions {id: answer} in
FILE.predictions.json, the official scripts' predictions format (the score stage reads it)."""

from __future__ import annotations

from megazoo.tasks.synthetic_qa.score import score
from megazoo.tasks.synthetic_qa.squad import read_squad

TASK = "synthetic_qa"
PREDICTIONS = ".json"  # {id: answer}, as evaluate-v1.1.py / evaluate-v2.0.py read it


def evaluate_checkpoint(data, checkpoint, batch: int = 32, null_threshold: float | None = None) -> dict:
    """{"predictions": {id: text}, "result": score()'s dict, "version", "checkpoint"}."""
    from megazoo.tasks.synthetic_qa.cli_common import need_file
    from megazoo.tasks.synthetic_qa.predict import Model

    f = read_squad(need_file(data, "--data"))
    if not f.questions:
        raise ValueError(f"{data}: holds no questions")
    model = Model(checkpoint, "qa")
    if null_threshold is not None:
        model.settings.null_threshold = null_threshold
    preds = model.answer(f.questions, f.v2, batch)
    predictions = {q.id: p["text"] for q, p in zip(f.questions, preds)}
    return {"predictions": predictions, "result": score(f.questions, predictions, f.v2), "version": f.version,
            "checkpoint": str(model.path)}


def result_record(result: dict, **extra) -> dict:
    """FILE.json of a score() result: {"task", "n", "metrics", "counts", "missing", ...extra}."""
    from megazoo.eval.taskkit import evaluation_record

    return evaluation_record(TASK, result["n"], result["metrics"], counts=result["counts"], missing=result["missing"],
                             **extra)


def write_evaluation(out, r: dict, data) -> None:
    """evaluate_checkpoint's result `r` as FILE.json and FILE.predictions.json (taskkit's naming rule)."""
    from megazoo.eval.taskkit import write_evaluation as write

    result = r["result"]
    write(out, TASK, result["n"], result["metrics"], r["predictions"], ext=PREDICTIONS, counts=result["counts"],
          missing=result["missing"], version=r["version"], data=str(data), checkpoint=r["checkpoint"])


def shown(metrics: dict) -> str:
    """The metrics for a printed line: percentages, as the official scripts print them."""
    return ", ".join(f"{k} {100 * v:.2f}" for k, v in metrics.items())
