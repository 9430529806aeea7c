"""What the `train` stage runs for a reader recipe (task.component reader, e2e or mss) once it is
loaded and checked (../stages.py): the core trainer on the reader builder (builder.py) in this
process or on each `--nproc` rank, then the run's evaluation record through the task-evaluation
kit: LOG_DIR/reader.json (`{"task", "n", "metrics", "predictions", ...}` with the loss curve and
timings), reader.predictions.jsonl (one line per test question) and, end to end, LOG_DIR/retriever/
(both towers: index, evaluate and train.init_from read it). The trainer's own files (config.yaml,
metrics.jsonl, checkpoints/) sit beside them; checkpoint.resume=auto continues a killed run or one
whose train.steps was raised."""

from __future__ import annotations

import sys
from pathlib import Path


def run_reader(cfg, prog: str) -> int:
    """Train in this process (alone or one rank; `cfg` a RunConfig or, on a launched rank, its dict)
    under `prog`'s name; rank 0 prints the result line."""
    from megazoo.core.train.commands import run_in_rank
    from megazoo.core.train.config import RunConfig

    if not isinstance(cfg, RunConfig):
        cfg = RunConfig.from_dict(cfg)
    done: dict = {}

    def body(rank: int) -> None:
        done["record"], done["rank"] = train_reader(cfg), rank

    code = run_in_rank(prog, body, run_dir=cfg.run_dir())
    if code == 0 and done.get("rank") == 0:
        record = done["record"]
        m, k = record["metrics"], record["top_k"]
        print(f"{record['component']}: EM {100 * m['em']:.2f}, F1 {100 * m['f1']:.2f} on {record['n']} questions "
              f"(top-{k} answer recall "
              f"{100 * m[f'top{k}_recall']:.2f}); written to {cfg.run_dir()}/reader.json")
    return code


def train_reader(cfg) -> dict:
    """The core trainer on the reader builder, then the run's record (every rank returns it; rank 0
    writes it and the predictions: eval/taskkit.write_evaluation)."""
    from megazoo.core.train.trainer import Trainer
    from megazoo.eval.taskkit import evaluation_record, predictions_path, write_evaluation
    from megazoo.tasks.retrieval.reader.evaluate import save_retriever

    trainer = Trainer(cfg)
    try:
        builder = trainer.builder
        # end to end: the questions' top-k with the (initial or resumed) query tower, also when a
        # resumed run has no step left to take before its evaluation
        builder.before_step(trainer.step, trainer.chunks, trainer.ctx, trainer.dtype)
        summary = trainer.fit()
        valid = summary["valid"] or trainer.evaluate()
        s, rank0 = builder.settings, trainer.ctx.rank == 0
        metrics = {k: valid[k] for k in ("em", "f1", f"top{s.top_k}_recall", "retrieval_top1", "retrieval_top5",
                                         "retrieval_top20")}
        t = cfg.train
        extra = {"component": s.component, "valid_loss": valid["loss"], "steps": trainer.step,
                 "questions_per_step": t.global_batch, "top_k": s.top_k,
                 "refreshes": (trainer.step - 1) // s.refresh_steps if s.end_to_end else 0,
                 "losses": summary["losses"], "train_s": summary["wall_s"] - builder.eval_seconds,
                 "eval_s": builder.eval_seconds, "layout": trainer.layout(), "retriever": s.retriever,
                 "reader_init": str(t.init_from), "test_file": s.test_file}
        out = Path(cfg.run_dir())
        if s.end_to_end:
            extra["retriever_out"] = str(save_retriever(trainer.chunks[0].query, builder.evidence, s.retriever, out,
                                                        write=rank0))
        n = len(builder.test)
        if rank0:
            write_evaluation(out / "reader.json", "retrieval", n, metrics, builder.predictions, **extra)
        sys.stdout.flush()
        return evaluation_record("retrieval", n, metrics, predictions=predictions_path(out / "reader.json").name,
                                 **extra)
    finally:
        trainer.close()
