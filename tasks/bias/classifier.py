"""The fine-tuned baseline's evaluation: a `task: bias` training checkpoint (builder.py) scores the
test posts with p(positive), and the prompts' procedure turns the scores into the same record.

    model = open_classifier("runs/bias/finetune/checkpoints/best")     # classifier_settings(): None if not one
    result = evaluate_classifier(model, load_posts("SBIC.v2.tst.csv"), dev=load_posts("SBIC.v2.dev.csv"))

The result has the keys of pipeline.evaluate_posts ("n", "metrics", "ci", "threshold",
"predictions") computed by the same functions (evaluate.summarise: eval.metrics.roc_auc, the
bootstrap, the dev-tuned threshold; evaluate.prediction_rows: the same post ids), so a fine-tuned
evaluation and a prompt evaluation of one test CSV compare row by row.
"""

from __future__ import annotations

from typing import Sequence

from megazoo.tasks.bias.data import Post
from megazoo.tasks.bias.evaluate import prediction_rows, summarise, tune_threshold

TASK = "bias"


def classifier_settings(checkpoint) -> dict | None:
    """The task settings a bias training checkpoint (a run folder, its checkpoints/, one iter_* or
    checkpoints/best) was trained with, from its meta alone (no weights read); None for a decoder
    folder or a checkpoint of anything else."""
    from megazoo.eval.readers.common import MissingFile
    from megazoo.eval.taskkit import NotTaskCheckpoint, read_task_meta

    try:
        _, meta = read_task_meta(checkpoint, TASK)
    except (NotTaskCheckpoint, MissingFile):
        return None
    return {k: v for k, v in meta["task"].items() if k != "name"}


def check_category(checkpoint, settings: dict, category: str) -> None:
    """The category asked for must be the one the classifier was trained for (a one-line ValueError)."""
    from megazoo.tasks.bias.builder import BiasTask

    trained = settings.get("category", BiasTask.category)
    if category != trained:
        raise ValueError(f"--category {category}: the classifier {checkpoint} was fine-tuned for {trained!r}; "
                         f"give --category {trained} or a classifier trained for {category}")


def open_classifier(checkpoint):
    """The checkpoint as a model in this process (eval/taskkit.TaskModel: builder, chunks, tokenizer)."""
    from megazoo.eval.taskkit import open_task_model

    return open_task_model(checkpoint, TASK)


def classifier_scores(model, posts: Sequence[Post], batch: int | None = None) -> list[float]:
    """p(positive) of each post, its input built as in training (the checkpoint's max_seq_length)."""
    from megazoo.tasks.bias.builder import encode_posts

    enc = encode_posts(posts, model.tokenizer, model.builder.settings.max_seq_length)
    return model.builder.scores(model.chunks, model.ctx, enc, batch=batch)


def evaluate_classifier(model, test: Sequence[Post], dev: Sequence[Post] | None = None, batch: int | None = None,
                        samples: int = 1000, seed: int = 0) -> dict:
    """{"n", "metrics", "ci", "threshold", "predictions"} on `test`, as pipeline.evaluate_posts."""
    scores = classifier_scores(model, test, batch)
    threshold = None
    if dev:
        threshold = tune_threshold([p.label for p in dev], classifier_scores(model, dev, batch))
    summary = summarise([p.label for p in test], scores, threshold, samples=samples, seed=seed)
    return {"n": len(test), **summary, "threshold": threshold, "predictions": prediction_rows(test, scores)}
