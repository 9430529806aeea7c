"""The evaluate stage: a biomed training checkpoint's metrics on one data file.

The checkpoint's meta holds the model config (the BERT with its head), the task settings it was
trained with (kind, labels, max_seq_length, doc_stride, ...) and the tokenizer, so the inputs are
built exactly as in training. The task-evaluation kit (eval/taskkit.py) reads the meta and makes
the model in one process with the weights loaded; the builder predicts.

With a BioASQ golden file (`--golden`, kind qa) the test batch's snippets are scored per question
(bioasq.py): the golden file and the batch's snippet ids are checked before the model is built.
"""

from __future__ import annotations

from pathlib import Path

from megazoo.tasks.biomed.bioasq import Golden, group_snippets, read_golden, score_questions
from megazoo.tasks.biomed.data import MissingFile, read_split, split_file


def evaluate_checkpoint(data, checkpoint, kind: str | None = None, split: str = "test", batch: int = 32,
                        golden=None) -> dict:
    """{"kind", "examples", "predictions", "metrics", "checkpoint", "step"} of a checkpoint on
    `data` (a file, or a release folder's `split`); a folder that is not a biomed checkpoint (of
    `kind`, when given) raises the kit's NotTaskCheckpoint. With `golden` (a BioASQ golden file,
    kind qa) the metrics are per question and "questions" (bioasq.QuestionScores) is added."""
    from megazoo.eval.taskkit import open_task_model, read_task_meta

    if batch < 1:
        raise ValueError(f"--batch must be >= 1, got {batch}")
    from megazoo.eval.readers.hf_source import is_hf_source

    hf = is_hf_source(data)  # a Hugging Face dataset (qa): the batch is named by the source itself
    if not hf and not Path(data).exists():
        raise MissingFile(f"--data {data}: no such file or folder")
    if golden is not None and kind != "qa":
        raise ValueError(f"--golden {golden}: a BioASQ golden file scores factoid questions; use it with --kind qa")
    examples = None
    if kind is not None:
        # a wrong checkpoint (its meta.json alone), then a bad data or golden file, are reported before
        # the model is built and its weights are loaded
        read_task_meta(checkpoint, "biomed", kind)
        examples = read_split(data, kind, split)
        if golden is not None:
            golden = _golden_for(golden, examples, str(data) if hf else split_file(data, kind, split))
    model = open_task_model(checkpoint, "biomed", kind)
    builder = model.builder
    kind = builder.settings.kind
    if examples is None:
        examples = read_split(data, kind, split)
    if not examples:
        raise ValueError(f"{data}: holds no {kind} examples")
    enc = builder.encode(examples, model.tokenizer)
    predictions = builder.predict(model.chunks, model.ctx, examples, enc, batch=batch)
    result = {"kind": kind, "examples": examples, "predictions": predictions, "checkpoint": str(model.path),
              "step": model.meta.get("step")}
    if golden is None:
        return {**result, "metrics": builder.metrics(examples, predictions)}
    scores = score_questions(golden, examples, predictions, str(data) if hf else split_file(data, kind, split))
    return {**result, "metrics": scores.metrics, "questions": scores}


def _golden_for(path, examples: list, batch) -> Golden:
    """The golden file read, and every snippet of the batch matched to one of its questions."""
    if not Path(path).is_file():
        raise MissingFile(f"--golden {path}: no such file (expected the BioASQ golden JSON of the test batch)")
    golden = read_golden(path)
    group_snippets(golden, examples, batch)
    return golden
