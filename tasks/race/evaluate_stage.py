"""The evaluate stage: a RACE training checkpoint's accuracy on a split, read through the framework.

The checkpoint's meta says everything the model needs: its model config (the BERT with the
"choice" head), the task settings it was trained with (max_seq_length, max_qa_length, ...) and the
tokenizer, so the inputs are built exactly as in training. The task-evaluation kit
(eval/taskkit.py open_task_model) makes the model in one process and loads the weights; the
builder predicts.
"""

from __future__ import annotations

from pathlib import Path

import torch

from megazoo.eval.readers.common import MissingFile
from megazoo.tasks.race.evaluate import predictions_record


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
    """The predictions record of a RACE checkpoint on `split` of the RACE folder `data` (one process);
    a folder that is not a RACE training checkpoint raises the kit's NotTaskCheckpoint."""
    from megazoo.eval.taskkit import open_task_model

    if batch < 1:
        raise ValueError(f"--batch must be >= 1, got {batch}")
    if not Path(data).exists():
        raise MissingFile(f"--data {data}: no such RACE folder (RACE/{{train,dev,test}}/{{middle,high}}/*.txt "
                          f"or HF `race` parquet/JSON)")
    model = open_task_model(checkpoint, "race")
    return predict_split(model.builder, model.chunks, model.ctx, data, split, model.tokenizer, batch,
                         checkpoint=str(model.path), step=model.meta.get("step"))
