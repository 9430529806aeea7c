"""The task-evaluation kit: what every task package's evaluate, sample and leaderboard stages share
(Megatron's tasks/eval_utils.py idea, written once below tasks/).

- `run_checkpoints(path)`: a training run folder means its checkpoints/.
- `read_task_meta(path, task)`: (resolved iter_* folder, meta) of a task's training checkpoint, or
  one line saying what the folder is instead and how to make the right one.
- `open_task_model(path, task)`: that checkpoint as a model in this process: the task builder (the
  settings it was trained with), its chunks with the weights loaded, the tokenizer, the meta.
- `load_decoder(path)`: a GPT/Llama decoder (training run, iter_*, import-hf or Hugging Face folder)
  with its tokenizer, for stages that sample text.
- `on_rank(prog, ctx, body)`: a stage's work on one rank of a tp x pp layout, its user errors one
  line from rank 0 as the command-line boundary would print them.
- `write_evaluation(out, task, n, metrics, predictions)`: FILE.json `{"task", "n", "metrics", ...}`
  and the predictions beside it under one naming rule, FILE.predictions.EXT, both written atomically
  (the predictions first, so a summary never names a file that is not there).

Metrics are fractions in [0, 1] in every file (eval/metrics); percentages only when printed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from megazoo.eval.readers.common import MissingFile

PREDICTION_FORMATS = (".jsonl", ".json", ".txt", ".tsv")  # the predictions file's extension says its format


class NotTaskCheckpoint(ValueError):
    """The folder is not a training checkpoint of the task (of the asked kind)."""


def run_checkpoints(path: str | os.PathLike) -> Path:
    """A training run folder (holding checkpoints/) means its checkpoints/; anything else as given."""
    path = Path(path)
    if (path / "checkpoints").is_dir() and not (path / "model.yaml").is_file() and not any(path.glob("iter_*")):
        return path / "checkpoints"
    return path


def _train_hint(task: str, stage: str, path) -> str:
    return f"train it first with `megazoo task {task} {stage} RECIPE --set train.init_from={path}`"


def read_task_meta(checkpoint: str | os.PathLike, task: str, kind: str | None = None, *,
                   stage: str = "train", kind_key: str = "kind", default_kind: str | None = None) -> tuple[Path, dict]:
    """(resolved iter_* folder, meta) of a `task` training checkpoint: a run folder, its checkpoints/,
    one iter_* or checkpoints/best. With `kind`, the checkpoint's task.<kind_key> (default
    `default_kind`) must equal it. Anything else raises NotTaskCheckpoint (MissingFile when absent)."""
    from megazoo.core.checkpoint import CheckpointError, open_checkpoint

    path = Path(checkpoint)
    if not path.exists():
        raise MissingFile(f"checkpoint {path} does not exist")
    if (path / "model.yaml").is_file() or (path / "config.json").is_file():
        what = "a Hugging Face" if (path / "config.json").is_file() else "an imported (import-hf)"
        raise NotTaskCheckpoint(f"{path} is {what} model folder, not a {task} training checkpoint (it has no "
                                f"{task} head); {_train_hint(task, stage, path)}")
    path = run_checkpoints(path)
    try:
        resolved, record = open_checkpoint(path)
    except CheckpointError as e:
        raise NotTaskCheckpoint(f"{e}; this stage reads a {task} run's checkpoints/ (made by `megazoo task "
                                f"{task} {stage}`)") from None
    meta = record.get("meta") or {}
    settings = meta.get("task")
    name = settings.get("name") if isinstance(settings, dict) else settings
    if name != task or not isinstance(meta.get("model"), dict):
        what = f"a {name} training" if name else f"a {meta.get('arch') or 'model'} pretraining"
        raise NotTaskCheckpoint(f"{path}: not a {task} checkpoint (its task is {name!r}: {what} checkpoint); "
                                f"{_train_hint(task, stage, path)}")
    if kind is not None and settings.get(kind_key, default_kind) != kind:
        raise NotTaskCheckpoint(f"{path}: a {task} {settings.get(kind_key, default_kind)!r} checkpoint, this stage "
                                f"needs a {kind!r} one (task.{kind_key}: {kind})")
    return resolved, meta


@dataclass
class TaskModel:
    """A task checkpoint loaded in one process (or at `ctx`'s layout)."""

    path: Path  # the resolved iter_* folder
    meta: dict
    builder: Any
    ctx: Any
    chunks: list
    tokenizer: Any

    @property
    def settings(self) -> dict:
        """The task settings the checkpoint was trained with (task.* without its name)."""
        return {k: v for k, v in self.meta["task"].items() if k != "name"}


def open_task_model(checkpoint: str | os.PathLike, task: str, kind: str | None = None, *, stage: str = "train",
                    ctx=None, tokenizer: str = "bert-wordpiece", kind_key: str = "kind",
                    default_kind: str | None = None) -> TaskModel:
    """The task's builder (through the "megazoo.tasks" entry point, with the checkpoint's settings),
    its chunks with the checkpoint's weights, and the tokenizer it was trained with."""
    from megazoo.core.data.tokenizers import build_tokenizer
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.train.models import load_builder

    resolved, meta = read_task_meta(checkpoint, task, kind, stage=stage, kind_key=kind_key, default_kind=default_kind)
    builder = load_builder(meta["model"], task=meta["task"])
    ctx = ctx or ParallelContext.single()
    chunks = builder.chunks(ctx, 0)
    report = builder.load_weights(chunks, resolved, ctx)
    if report.get("missing"):  # a task checkpoint holds the whole model, head included
        raise NotTaskCheckpoint(f"{resolved}: lacks {', '.join(report['missing'][:3])}; not a whole {task} model")
    return TaskModel(resolved, meta, builder, ctx, chunks, build_tokenizer(meta.get("tokenizer") or tokenizer))


def load_decoder(checkpoint: str | os.PathLike, ctx=None, use: str = "generation"):
    """(model, or this rank's chunks at `ctx`'s layout, and the tokenizer) of a GPT/Llama decoder: a
    training run folder, its checkpoints/, one iter_*, an import-hf folder or a Hugging Face folder
    (config.json and weights, or one .gguf). `use` names what the caller does, for messages."""
    from megazoo.zoo.decoder import load_decoder as load

    path = Path(checkpoint)
    if not path.is_dir():
        raise MissingFile(f"checkpoint {path}: no such folder (give a decoder: a training run or its checkpoints/, "
                          f"an import-hf folder or a Hugging Face folder)")
    return load(run_checkpoints(path), ctx, use)


def on_rank(prog: str, ctx, body) -> int:
    """body() in this process (ctx None: its errors reach megazoo/cli.py's boundary) or on one rank
    of a tp x pp layout (core/parallel/launch.run_layout), where no boundary is: there a known error
    (core/train/user_errors.py) is one line `prog: error: ...` from rank 0 and the rank returns its
    exit code, as the boundary would give; a bug keeps its traceback."""
    if ctx is None:
        return body()
    import sys

    from megazoo.core.train.user_errors import classify, debug

    try:
        return body()
    except Exception as e:  # noqa: BLE001 - a known error becomes one line; a bug keeps its traceback
        known = None if debug() else classify(e)
        if known is None:
            raise
        if ctx.rank == 0:
            print(f"{prog}: error: {known[1]}", file=sys.stderr)
        return known[0]


def predictions_path(out: str | os.PathLike, ext: str = ".jsonl") -> Path:
    """FILE.json -> FILE.predictions.EXT beside it (the one naming rule of every task's evaluate)."""
    if ext not in PREDICTION_FORMATS:
        raise ValueError(f"predictions format {ext!r} is not one of {', '.join(PREDICTION_FORMATS)}")
    out = Path(out)
    stem = out.name[:-len(".json")] if out.name.endswith(".json") else out.name
    return out.with_name(stem + ".predictions" + ext)


def evaluation_outputs(ext: str = ".jsonl"):
    """The `also=` of an evaluate stage's `output_arg("--out", ...)`: the predictions file is an output
    too, so the output policy checks it like FILE.json."""
    return lambda out: [predictions_path(out, ext)]


def _predictions_bytes(predictions, ext: str) -> str:
    if ext == ".jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in predictions)
    if ext == ".json":
        return json.dumps(predictions, ensure_ascii=False, indent=1) + "\n"
    if not isinstance(predictions, str):
        raise TypeError(f"{ext} predictions are written as text; got {type(predictions).__name__}")
    return predictions


def evaluation_record(task: str, n: int, metrics: dict, **extra) -> dict:
    """`{"task", "n", "metrics": {name: float}, ...extra}`: every metric a plain number (0-1 fractions)."""
    bad = [k for k, v in metrics.items() if not isinstance(v, (int, float)) or isinstance(v, bool)]
    if bad:
        raise TypeError(f"metrics must be numbers; {', '.join(bad)} are not")
    return {"task": task, "n": int(n), "metrics": {k: float(v) for k, v in metrics.items()}, **extra}


def write_evaluation(out: str | os.PathLike, task: str, n: int, metrics: dict, predictions, *,
                     ext: str = ".jsonl", **extra) -> tuple[Path, Path]:
    """Write FILE.predictions.EXT (a list of records for .jsonl, any JSON value for .json, text for
    .txt/.tsv), then FILE.json `{"task", "n", "metrics", "predictions": its name, ...extra}`; each
    atomically. Returns (summary, predictions) paths."""
    from megazoo.core.fs import write_json_atomic, write_text_atomic

    out = Path(out)
    pred = predictions_path(out, ext)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(pred, _predictions_bytes(predictions, ext))
    write_json_atomic(out, evaluation_record(task, n, metrics, predictions=pred.name, **extra), indent=1)
    return out, pred


def read_evaluation(path: str | os.PathLike) -> dict:
    """An evaluation summary written by write_evaluation (checked for its keys)."""
    from megazoo.core.fs import read_utf8

    path = Path(path)
    if not path.is_file():
        raise MissingFile(f"{path}: no such evaluation file (write one with the task's evaluate stage)")
    try:
        record = json.loads(read_utf8(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}: not JSON ({e.msg}); give an evaluate stage's --out file") from None
    missing = [k for k in ("task", "n", "metrics") if not isinstance(record, dict) or k not in record]
    if missing:
        raise ValueError(f"{path}: not an evaluation file (missing {', '.join(missing)}); give an evaluate "
                         f"stage's --out file")
    return record


def load_hf_tokenizer(folder: str | os.PathLike, gguf_file: str | None = None):
    """The Hugging Face tokenizer saved in `folder` (a model or classifier folder; never remote code);
    `gguf_file`: the tokenizer inside that one .gguf file of the folder (SmolLM2's offline package)."""
    from transformers import AutoTokenizer

    from megazoo.zoo.hf.gguf import hf_folder

    folder = hf_folder(folder, gguf_file) if gguf_file else folder  # read once, from megazoo's cache after
    return AutoTokenizer.from_pretrained(str(folder))
