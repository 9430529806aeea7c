"""The evaluate stage: a QA checkpoint's answers on a SQuAD dev file, scored as the official
script scores them (score.py; v2.0 when the file is). Writes {"task", "n", "metrics", "counts",
"missing", "version", "data", "checkpoint"} and, when asked, the predictions {id: answer}."""

from __future__ import annotations

from megazoo.core.fs import write_json_atomic
from megazoo.tasks.synthetic_qa.score import score
from megazoo.tasks.synthetic_qa.squad import read_squad


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


def write_result(out, result: dict, **meta) -> None:
    write_json_atomic(out, {"task": "synthetic_qa", "n": result["n"], "metrics": result["metrics"],
                            "counts": result["counts"], "missing": result["missing"], **meta})
