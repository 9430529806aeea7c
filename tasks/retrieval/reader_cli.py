"""What the `reader`, `e2e` and `mss` stages share: the recipe (RunConfig.load, so --set works as for
training) with task.component checked or set to the stage's, then the core trainer on the reader
builder (reader_builder.py) in one process or on `--nproc` ranks, and the stage's record:
LOG_DIR/reader.json (metrics, the loss curve, timings), reader.predictions.json and, end to end,
LOG_DIR/retriever/ (both towers: index, evaluate and train.init_from read it). The trainer's own
files (config.yaml, metrics.jsonl, checkpoints/) sit beside them; checkpoint.resume=auto continues
a killed run or one whose train.steps was raised."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path


def add_arguments(parser, default_recipe: str) -> None:
    from megazoo.core.train.commands import add_recipe_arguments

    add_recipe_arguments(parser, f"a YAML recipe path or a shipped recipe name ({default_recipe})",
                         "train.steps=20 task.top_k=4")


def load_recipe(stage: str, recipe, overrides=None):
    from megazoo.core.train.config import ConfigError, RunConfig
    from megazoo.tasks.retrieval.reader_task import ReaderTask

    cfg = RunConfig.load(recipe, overrides)
    name = cfg.task.setdefault("name", "retrieval")
    if name != "retrieval":
        raise ConfigError(f"the recipe's task.name is {name!r}; this stage trains the retrieval reader")
    component = cfg.task.setdefault("component", stage)
    if component != stage:
        raise ConfigError(f"task.component={component!r} is not this stage's ({stage}); use `megazoo task retrieval "
                          f"{component}`")
    ReaderTask.from_dict(cfg.task)  # every key checked before anything loads
    if not cfg.train.init_from:
        raise ConfigError("the reader needs a BERT to start from: train.init_from")
    return cfg


def run_stage(stage: str, args) -> int:
    from megazoo.core.train.commands import run_recipe_command

    return run_recipe_command(args, f"megazoo task retrieval {stage}", partial(load_recipe, stage),
                              partial(run_here, stage))


def run_here(stage: str, cfg) -> int:
    """Train in this process (alone or one rank); rank 0 prints the result line."""
    from megazoo.core.train.commands import run_in_rank
    from megazoo.core.train.config import RunConfig
    from megazoo.tasks.retrieval.errors import KNOWN

    if not isinstance(cfg, RunConfig):
        cfg = RunConfig.from_dict(cfg)
    done: dict = {}

    def body(rank: int) -> None:
        done["record"], done["rank"] = train_reader(cfg), rank

    code = run_in_rank(f"megazoo task retrieval {stage}", body, KNOWN, run_dir=cfg.run_dir())
    if code == 0 and done.get("rank") == 0:
        record = done["record"]
        m, k = record["metrics"], record["top_k"]
        print(f"{stage}: EM {m['em']:.2f} on {record['n']} questions (top-{k} answer recall "
              f"{m[f'top{k}_recall']:.2f}); written to {cfg.run_dir()}/reader.json")
    return code


def train_reader(cfg) -> dict:
    """The core trainer on the reader builder, then the stage's record (every rank returns it;
    rank 0 writes the files)."""
    from megazoo.core.fs import write_json_atomic
    from megazoo.core.train.trainer import Trainer
    from megazoo.tasks.retrieval.reader_eval import save_retriever

    trainer = Trainer(cfg)
    try:
        builder = trainer.builder
        # end to end: the questions' top-k with the (initial or resumed) query tower, also when a
        # resumed run has no step left to take before its evaluation
        builder.before_step(trainer.step, trainer.chunks, trainer.ctx, trainer.dtype)
        summary = trainer.fit()
        valid = summary["valid"] or trainer.evaluate()
        s, rank0 = builder.settings, trainer.ctx.rank == 0
        metrics = {k: valid[k] for k in ("em", f"top{s.top_k}_recall", "retrieval_top1", "retrieval_top5",
                                         "retrieval_top20")}
        t = cfg.train
        record = {"task": "retrieval", "component": s.component, "n": len(builder.test), "metrics": metrics,
                  "valid_loss": valid["loss"], "steps": trainer.step, "questions_per_step": t.global_batch,
                  "top_k": s.top_k, "refreshes": (trainer.step - 1) // s.refresh_steps if s.end_to_end else 0,
                  "losses": summary["losses"], "train_s": summary["wall_s"] - builder.eval_seconds,
                  "eval_s": builder.eval_seconds, "layout": trainer.layout(), "retriever": s.retriever,
                  "reader_init": str(t.init_from), "test_file": s.test_file}
        out = Path(cfg.run_dir())
        if s.end_to_end:
            record["retriever_out"] = str(save_retriever(trainer.chunks[0].query, builder.evidence, s.retriever, out,
                                                         write=rank0))
        if rank0:
            write_json_atomic(out / "reader.json", record, indent=1)
            write_json_atomic(out / "reader.predictions.json", {"predictions": builder.predictions}, indent=0)
        sys.stdout.flush()
        return record
    finally:
        trainer.close()
