"""A synthetic_qa training checkpoint (QA model or answer extractor) in one process, and its
answers: what the answers, filter and evaluate stages and the leaderboard share.

The checkpoint is opened by the task-evaluation kit (eval/taskkit.open_task_model): its meta holds
the model config (BERT with the span head), the task settings it was trained with (kind,
max_seq_length, doc_stride, ...) and the tokenizer, so inputs are built as in training. A folder
that is not a synthetic_qa checkpoint of the asked kind is refused with taskkit's NotTaskCheckpoint.
"""

from __future__ import annotations

TASK = "synthetic_qa"


class Model:
    """A checkpoint loaded in one process: .answer(questions, v2) -> decode.decode's dicts."""

    def __init__(self, checkpoint, kind: str | None = None):
        from megazoo.eval.taskkit import open_task_model

        m = open_task_model(checkpoint, TASK, kind, default_kind="qa")
        self.path, self.meta, self.builder, self.ctx, self.chunks, self.tokenizer = \
            m.path, m.meta, m.builder, m.ctx, m.chunks, m.tokenizer

    @property
    def settings(self):
        """The builder's settings (SyntheticQATask): a stage may change null_threshold."""
        return self.builder.settings

    def answer(self, questions: list, v2: bool = False, batch: int | None = None) -> list[dict]:
        if not questions:
            return []
        enc = self.builder.encode(questions, self.tokenizer)
        return self.builder.predict(self.chunks, self.ctx, questions, enc, v2, batch=batch)
