"""A synthetic_qa training checkpoint (QA model or answer extractor) in one process, and its
answers: what the answers, filter and evaluate stages and the leaderboard share.

The checkpoint's meta holds the model config (BERT with the span head), the task settings it was
trained with (kind, max_seq_length, doc_stride, ...) and the tokenizer, so inputs are built as in
training.
"""

from __future__ import annotations

from pathlib import Path


class NotSyntheticQACheckpoint(ValueError):
    """The folder is not a synthetic_qa training checkpoint (of the asked kind)."""


def read_meta(checkpoint, kind: str | None = None) -> tuple[Path, dict]:
    from megazoo.core.checkpoint import CheckpointError, open_checkpoint
    from megazoo.eval.readers.common import MissingFile

    path = Path(checkpoint)
    if not path.exists():
        raise MissingFile(f"checkpoint {path} does not exist")
    if (path / "model.yaml").is_file() or (path / "config.json").is_file():
        raise NotSyntheticQACheckpoint(f"{path} is a model folder, not a synthetic_qa training checkpoint; train "
                                       f"it with `megazoo task synthetic_qa train synthetic_qa --set "
                                       f"train.init_from={path}`")
    if (path / "checkpoints").is_dir() and not any(path.glob("iter_*")):
        path = path / "checkpoints"
    try:
        resolved, record = open_checkpoint(path)
    except CheckpointError as e:
        raise NotSyntheticQACheckpoint(str(e)) from None
    meta = record.get("meta") or {}
    task = meta.get("task") if isinstance(meta.get("task"), dict) else {}
    if task.get("name") != "synthetic_qa" or not isinstance(meta.get("model"), dict):
        raise NotSyntheticQACheckpoint(f"{path}: not a synthetic_qa checkpoint (its task is {task.get('name')!r})")
    if kind is not None and task.get("kind", "qa") != kind:
        raise NotSyntheticQACheckpoint(f"{path}: a synthetic_qa {task.get('kind')!r} checkpoint, this stage needs "
                                       f"a {kind!r} one")
    return resolved, meta


class Model:
    """A checkpoint loaded in one process: .answer(questions, v2) -> decode.decode's dicts."""

    def __init__(self, checkpoint, kind: str | None = None):
        from megazoo.core.data.tokenizers import build_tokenizer
        from megazoo.core.parallel.context import ParallelContext
        from megazoo.tasks.synthetic_qa.builder import build

        self.path, self.meta = read_meta(checkpoint, kind)
        self.builder = build({k: v for k, v in self.meta["task"].items() if k != "name"}, self.meta["model"])
        self.ctx = ParallelContext.single()
        self.chunks = self.builder.chunks(self.ctx, 0)
        report = self.builder.load_weights(self.chunks, self.path, self.ctx)
        if report.get("missing"):
            raise NotSyntheticQACheckpoint(f"{self.path}: lacks {', '.join(report['missing'][:3])}")
        self.tokenizer = build_tokenizer(self.meta.get("tokenizer") or "bert-wordpiece")

    @property
    def settings(self):
        return self.builder.settings

    def answer(self, questions: list, v2: bool = False, batch: int | None = None) -> list[dict]:
        if not questions:
            return []
        enc = self.builder.encode(questions, self.tokenizer)
        return self.builder.predict(self.chunks, self.ctx, questions, enc, v2, batch=batch)
