"""The evaluate stage: a RACE training checkpoint's accuracy on a split, read through the framework.

The checkpoint's meta says everything the model needs: its model config (the BERT with the
"choice" head), the task settings it was trained with (max_seq_length, max_qa_length, ...) and the
tokenizer, so the inputs are built exactly as in training. The task builder makes the model in one
process, loads the weights (`load_weights`, the path train.init_from takes) and predicts.
"""

from __future__ import annotations

from pathlib import Path

import torch

from megazoo.tasks.race.evaluate import predictions_record
from megazoo.tasks.race.files import MissingFile


class NotRaceCheckpoint(ValueError):
    """The folder is not a training checkpoint of a RACE run."""


def read_race_meta(checkpoint) -> tuple[Path, dict]:
    """(resolved iter_* folder, meta) of a RACE training checkpoint (a run's checkpoints/, one
    iter_*, or checkpoints/best); anything else raises NotRaceCheckpoint with what it is."""
    from megazoo.core.checkpoint import CheckpointError, open_checkpoint

    path = Path(checkpoint)
    if not path.exists():
        raise MissingFile(f"checkpoint {path} does not exist")
    if (path / "model.yaml").is_file() or (path / "config.json").is_file():
        kind = "a Hugging Face" if (path / "config.json").is_file() else "an imported (import-hf)"
        raise NotRaceCheckpoint(f"{path} is {kind} model folder without the RACE head, not a RACE training "
                                f"checkpoint; fine-tune it first with `megazoo task race finetune race --set "
                                f"train.init_from={path}`")
    if (path / "checkpoints").is_dir() and not any(path.glob("iter_*")):
        path = path / "checkpoints"  # a run folder: its checkpoints
    try:
        resolved, record = open_checkpoint(path)
    except CheckpointError as e:
        raise NotRaceCheckpoint(f"{e}; `task race evaluate` reads a RACE run's checkpoints/ (made by "
                                f"`megazoo task race finetune`)") from None
    meta = record.get("meta") or {}
    task = meta.get("task")
    name = task.get("name") if isinstance(task, dict) else task
    if name != "race" or not isinstance(meta.get("model"), dict):
        what = f"a {name} fine-tuning" if name else f"a {meta.get('arch') or 'model'} pretraining"
        raise NotRaceCheckpoint(f"{path}: not a RACE checkpoint (its task is {name!r}): {what} checkpoint, without the "
                                f"RACE head; fine-tune it first with `megazoo task race finetune race --set "
                                f"train.init_from={path}`")
    return resolved, meta


def predict_split(builder, chunks, ctx, data, split: str | None, tokenizer, batch: int = 8,
                  dtype: torch.dtype = torch.float32, **meta) -> dict:
    """The predictions record (probabilities, accuracy per level) of `chunks` on one split."""
    inputs, questions = builder.encode(data, split, tokenizer)
    if not questions:
        raise ValueError(f"{data}: the {split or 'given'} split holds no questions")
    probs = builder.predict(chunks, ctx, inputs, dtype, batch)
    return predictions_record([q.uid for q in questions], [q.level for q in questions], inputs.labels.tolist(),
                              probs, data=str(data), split=split, **meta)


def evaluate_checkpoint(data, checkpoint, split: str | None = "test", batch: int = 8) -> dict:
    """The predictions record of a RACE checkpoint on `split` of the RACE folder `data` (one process)."""
    from megazoo.core.data.tokenizers import build_tokenizer
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.tasks.race.builder import build

    if batch < 1:
        raise ValueError(f"--batch must be >= 1, got {batch}")
    if not Path(data).exists():
        raise MissingFile(f"--data {data}: no such RACE folder (RACE/{{train,dev,test}}/{{middle,high}}/*.txt "
                                f"or HF `race` parquet/JSON)")
    resolved, meta = read_race_meta(checkpoint)
    task = {k: v for k, v in meta["task"].items() if k != "name"}
    builder = build(task, meta["model"])
    ctx = ParallelContext.single()
    chunks = builder.chunks(ctx, 0)
    report = builder.load_weights(chunks, resolved, ctx)
    if report.get("missing"):  # a RACE checkpoint holds the whole model, head included
        raise NotRaceCheckpoint(f"{resolved}: lacks {', '.join(report['missing'][:3])}; not a whole RACE model")
    tokenizer = build_tokenizer(meta.get("tokenizer") or "bert-wordpiece")
    return predict_split(builder, chunks, ctx, data, split, tokenizer, batch,
                         checkpoint=str(resolved), step=meta.get("step"))
