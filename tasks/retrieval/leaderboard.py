"""The retriever's evaluation for `megazoo eval leaderboard` (entry point megazoo.evaluations:retrieval).

A suite entry `{name: retrieval, path: DIR}` scores every BERT encoder of the suite (a plain one
such as the imported MiniLM, or one trained with `task: retrieval`; both are kind "encoder") as the
evaluate stage does: DPR top-k accuracy of DIR/nq-test.csv (or `qas: FILE`) over DIR/psgs_w100.tsv
(or `passages: FILE`), exact search, headline top-20.
"""

from __future__ import annotations

from pathlib import Path

from megazoo.eval.registry import Evaluation
from megazoo.eval.suite_options import suite_int

METRICS = ("top1", "top5", "top20", "top100")


def run(checkpoint: str, path: str, entry: dict) -> dict:
    from megazoo.tasks.retrieval.evaluate_stage import evaluate_retriever

    folder = Path(path)
    passages = entry.get("passages") or folder / "psgs_w100.tsv"
    qas = entry.get("qas") or folder / "nq-test.csv"
    batch = suite_int(entry, "batch_size", 32, 1, 4096)
    record, _ = evaluate_retriever(passages, qas, checkpoint, entry.get("index"), entry.get("pooling"), batch=batch)
    return {**record["metrics"], "n": record["n"]}


EVALUATION = Evaluation(
    name="retrieval", data="a folder with psgs_w100.tsv (id<TAB>text<TAB>title) and nq-test.csv "
                           "(question<TAB>['answer', ...]) in DPR's layouts",
    metrics=METRICS, headline="top20", run=run, kinds=("encoder",),
    options={"passages": "the passages file (default PATH/psgs_w100.tsv)",
             "qas": "the questions, *-test.csv or nq-*.json (default PATH/nq-test.csv)",
             "index": "an index folder of `megazoo task retrieval index` (default: exact search in memory)",
             "pooling": "mean or cls (default: the checkpoint's, mean for a plain encoder)",
             "batch_size": "texts per forward pass (default 32)"})
