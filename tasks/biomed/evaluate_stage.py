"""The evaluate stage: a biomed training checkpoint's metrics on one data file.

The checkpoint's meta holds the model config (the BERT with its head), the task settings it was
trained with (kind, labels, max_seq_length, doc_stride, ...) and the tokenizer, so the inputs are
built exactly as in training; the builder makes the model in one process, loads the weights and
predicts.
"""

from __future__ import annotations

from pathlib import Path

from megazoo.tasks.biomed.data import MissingFile, read_split


class NotBiomedCheckpoint(ValueError):
    """The folder is not a training checkpoint of a biomed run of the asked kind."""


def read_biomed_meta(checkpoint, kind: str | None = None) -> tuple[Path, dict]:
    """(resolved iter_* folder, meta) of a biomed checkpoint; of `kind` when given."""
    from megazoo.core.checkpoint import CheckpointError, open_checkpoint

    path = Path(checkpoint)
    if not path.exists():
        raise MissingFile(f"checkpoint {path} does not exist")
    if (path / "model.yaml").is_file() or (path / "config.json").is_file():
        raise NotBiomedCheckpoint(f"{path} is a model folder, not a biomed training checkpoint; fine-tune it with "
                                  f"`megazoo task biomed finetune biomed-ner --set train.init_from={path}`")
    if (path / "checkpoints").is_dir() and not any(path.glob("iter_*")):
        path = path / "checkpoints"  # a run folder: its checkpoints
    try:
        resolved, record = open_checkpoint(path)
    except CheckpointError as e:
        raise NotBiomedCheckpoint(str(e)) from None
    meta = record.get("meta") or {}
    task = meta.get("task") if isinstance(meta.get("task"), dict) else {}
    if task.get("name") != "biomed" or not isinstance(meta.get("model"), dict):
        raise NotBiomedCheckpoint(f"{path}: not a biomed checkpoint (its task is {task.get('name')!r}); fine-tune "
                                  f"one with `megazoo task biomed finetune RECIPE`")
    if kind is not None and task.get("kind") != kind:
        raise NotBiomedCheckpoint(f"{path}: a biomed {task.get('kind')} checkpoint, not {kind}")
    return resolved, meta


def load_checkpoint(checkpoint, kind: str | None = None):
    """(builder, chunks, ctx, tokenizer, meta, resolved) of a biomed checkpoint in one process."""
    from megazoo.core.data.tokenizers import build_tokenizer
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.tasks.biomed.builder import build

    resolved, meta = read_biomed_meta(checkpoint, kind)
    builder = build({k: v for k, v in meta["task"].items() if k != "name"}, meta["model"])
    ctx = ParallelContext.single()
    chunks = builder.chunks(ctx, 0)
    report = builder.load_weights(chunks, resolved, ctx)
    if report.get("missing"):
        raise NotBiomedCheckpoint(f"{resolved}: lacks {', '.join(report['missing'][:3])}; not a whole biomed model")
    tokenizer = build_tokenizer(meta.get("tokenizer") or "bert-wordpiece")
    return builder, chunks, ctx, tokenizer, meta, resolved


def evaluate_checkpoint(data, checkpoint, kind: str | None = None, split: str = "test", batch: int = 32) -> dict:
    """{"kind", "examples", "predictions", "metrics", "checkpoint", "step"} of a checkpoint on
    `data` (a file, or a release folder's `split`)."""
    if batch < 1:
        raise ValueError(f"--batch must be >= 1, got {batch}")
    if not Path(data).exists():
        raise MissingFile(f"--data {data}: no such file or folder")
    examples = None
    if kind is not None:
        # a wrong checkpoint (its meta.json alone), then a bad data file, are reported before the model
        # is built and its weights are loaded
        read_biomed_meta(checkpoint, kind)
        examples = read_split(data, kind, split)
    builder, chunks, ctx, tokenizer, meta, resolved = load_checkpoint(checkpoint, kind)
    kind = builder.settings.kind
    if examples is None:
        examples = read_split(data, kind, split)
    if not examples:
        raise ValueError(f"{data}: holds no {kind} examples")
    enc = builder.encode(examples, tokenizer)
    predictions = builder.predict(chunks, ctx, examples, enc, batch=batch)
    return {"kind": kind, "examples": examples, "predictions": predictions,
            "metrics": builder.metrics(examples, predictions), "checkpoint": str(resolved), "step": meta.get("step")}
