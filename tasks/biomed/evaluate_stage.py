"""The evaluate stage: a biomed training checkpoint's metrics on one data file.

The checkpoint's meta holds the model config (the BERT with its head), the task settings it was
trained with (kind, labels, max_seq_length, doc_stride, ...) and the tokenizer, so the inputs are
built exactly as in training. The task-evaluation kit (eval/taskkit.py) reads the meta and makes
the model in one process with the weights loaded; the builder predicts.
"""

from __future__ import annotations

from pathlib import Path

from megazoo.tasks.biomed.data import MissingFile, read_split


def evaluate_checkpoint(data, checkpoint, kind: str | None = None, split: str = "test", batch: int = 32) -> dict:
    """{"kind", "examples", "predictions", "metrics", "checkpoint", "step"} of a checkpoint on
    `data` (a file, or a release folder's `split`); a folder that is not a biomed checkpoint (of
    `kind`, when given) raises the kit's NotTaskCheckpoint."""
    from megazoo.eval.taskkit import open_task_model, read_task_meta

    if batch < 1:
        raise ValueError(f"--batch must be >= 1, got {batch}")
    if not Path(data).exists():
        raise MissingFile(f"--data {data}: no such file or folder")
    examples = None
    if kind is not None:
        # a wrong checkpoint (its meta.json alone), then a bad data file, are reported before the model
        # is built and its weights are loaded
        read_task_meta(checkpoint, "biomed", kind)
        examples = read_split(data, kind, split)
    model = open_task_model(checkpoint, "biomed", kind)
    builder = model.builder
    kind = builder.settings.kind
    if examples is None:
        examples = read_split(data, kind, split)
    if not examples:
        raise ValueError(f"{data}: holds no {kind} examples")
    enc = builder.encode(examples, model.tokenizer)
    predictions = builder.predict(model.chunks, model.ctx, examples, enc, batch=batch)
    return {"kind": kind, "examples": examples, "predictions": predictions,
            "metrics": builder.metrics(examples, predictions), "checkpoint": str(model.path),
            "step": model.meta.get("step")}
