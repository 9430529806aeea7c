"""The RACE stages end to end: fine-tune from a config, evaluate a checkpoint, ensemble predictions."""

from __future__ import annotations

import time
from pathlib import Path

import torch
import yaml

from megazoo.core.parallel.context import ParallelConfig, ParallelContext
from megazoo.tasks.race.config import RaceConfig
from megazoo.tasks.race.data import load_race
from megazoo.tasks.race.evaluate import format_accuracy, predictions_record, write_json_atomic
from megazoo.tasks.race.finetune import FineTuner, MetricsLog, predict
from megazoo.tasks.race.inputs import build_inputs
from megazoo.tasks.race.model import build_race_model, save_race_model


def tokenizer_for(spec: str):
    from megazoo.core.data.tokenizers import build_tokenizer

    return build_tokenizer(spec)


def ensure_data(cfg: RaceConfig, rank: int = 0) -> None:
    """With data.generate, write the generated set at data.path unless it is there (rank 0)."""
    d = cfg.data
    path = Path(d.path)
    if path.exists() or not d.generate:
        return
    if rank == 0:
        from megazoo.tasks.race.generate import generate_race

        held_out = max(2, int(d.generate_articles * 0.15))
        generate_race(path.with_name(path.name + ".tmp"), seed=d.generate_seed, article_words=d.generate_words,
                      articles={"train": d.generate_articles, "dev": held_out, "test": held_out})
        path.with_name(path.name + ".tmp").rename(path)


def run_finetune(cfg: RaceConfig, ctx: ParallelContext | None = None, echo: bool = True) -> dict:
    """Fine-tune as `cfg` says, on this rank; save the checkpoint under <log.dir>/checkpoints."""
    import torch.distributed as dist

    world = dist.get_world_size() if dist.is_initialized() else 1
    cfg.validate(world)
    ctx = ctx or ParallelContext.build(ParallelConfig(tp=cfg.parallel.tp))
    ensure_data(cfg, ctx.rank)
    if world > 1:
        dist.barrier()
    torch.manual_seed(cfg.train.seed)
    run_dir = cfg.run_dir()
    if ctx.rank == 0:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    tok = tokenizer_for(cfg.data.tokenizer)
    d = cfg.data
    t0 = time.perf_counter()
    train_q = load_race(d.path, d.train_split)
    valid_q = load_race(d.path, d.valid_split) if d.valid_split else []
    n = cfg.train.eval_questions
    if n and len(valid_q) > n:  # evenly spread, so both levels and many articles are in
        valid_q = [valid_q[i * len(valid_q) // n] for i in range(n)]
    train = build_inputs(train_q, tok, d.max_seq_length, d.max_qa_length)
    valid = build_inputs(valid_q, tok, d.max_seq_length, d.max_qa_length) if valid_q else None
    model, _ = build_race_model(cfg.model.init, ctx, cfg.model.head_dropout, cfg.model.dropout, cfg.train.seed)
    if d.max_seq_length > model.bert.cfg.seq_length:
        raise ValueError(f"data.max_seq_length={d.max_seq_length} exceeds the encoder's "
                         f"{model.bert.cfg.seq_length} positions; lower it")
    log = MetricsLog(run_dir, ctx.rank, echo)
    if echo and ctx.rank == 0:
        print(f"[race] {len(train_q)} training and {len(valid_q)} validation questions "
              f"(inputs built in {time.perf_counter() - t0:.1f}s); {ctx.describe()}", flush=True)
    tuner = FineTuner(model, cfg, train, valid, [q.level for q in valid_q], log)
    summary = tuner.run()
    meta = {"tokenizer": d.tokenizer, "max_seq_length": d.max_seq_length, "max_qa_length": d.max_qa_length,
            "init": cfg.model.init, "seed": cfg.train.seed}
    path = save_race_model(model, run_dir / "checkpoints", tuner.step, meta)
    summary["checkpoint"] = str(path) if path else None
    return summary


def evaluate_checkpoint(data: str, checkpoint: str, split: str | None = "test", out: str | None = None,
             batch: int = 8, max_seq_length: int | None = None, echo: bool = True) -> dict:
    """Accuracy (overall, middle, high) of a fine-tuned checkpoint on a split; predictions to `out`."""
    from megazoo.core.checkpoint import open_checkpoint

    _, ckpt_meta = open_checkpoint(checkpoint)
    meta = ckpt_meta.get("meta") or {}
    if meta.get("task") != "race":
        raise ValueError(f"{checkpoint}: not a RACE checkpoint (task={meta.get('task')!r}); fine-tune one with "
                         f"`megazoo task race finetune RECIPE`")
    questions = load_race(data, split)
    tok = tokenizer_for(meta.get("tokenizer", "bert-wordpiece"))
    inputs = build_inputs(questions, tok, max_seq_length or meta.get("max_seq_length", 512),
                          meta.get("max_qa_length", 128))
    model, _ = build_race_model(checkpoint, ParallelContext.single(torch.device("cpu")), 0.0)
    probs, loss = predict(model, inputs, batch)
    record = predictions_record([q.uid for q in questions], [q.level for q in questions], inputs.labels.tolist(),
                                probs, data=str(data), split=split, checkpoint=str(checkpoint), loss=loss)
    if out:
        write_json_atomic(out, record)
    if echo:
        print(format_accuracy(record["accuracy"], record["counts"]))
    return record
