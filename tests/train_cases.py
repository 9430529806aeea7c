"""Helpers shared by the trainer tests: tiny run configs and rank functions for spawn()."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import torch

from megazoo.core.parallel.gather import full_state
from megazoo.core.train import RunConfig, Trainer

# MFU needs a peak; measuring it costs a second per run, which tests do not need
os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")


def tiny(run_dir, *overrides: str) -> RunConfig:
    """gpt-tiny shrunk for tests: 10 steps of 8 sequences of 32 tokens, quiet, no checkpoints."""
    base = ["train.steps=10", "train.global_batch=8", "train.micro_batch=2", "model.seq_length=32",
            "model.vocab_size=300", "train.eval_iters=1", "log.progress=false", "log.plot=false",
            "checkpoint.save=false", "checkpoint.resume=none", f"log.dir={run_dir}", "train.warmup=2",
            "train.lr=1e-3", "train.min_lr=1e-4", "train.clip_grad=0.5"]
    return RunConfig.load("gpt-tiny", base + list(overrides))


def text_model(recipe: str, run_dir, *overrides: str) -> RunConfig:
    """bert-tiny / t5-tiny shrunk for tests: 10 steps of 8 sequences of 32 tokens of the embedded
    corpus, no dropout, quiet, no checkpoints."""
    base = ["train.steps=10", "train.global_batch=8", "train.micro_batch=2", "model.seq_length=32",
            "model.dropout=0.0", "model.attention_dropout=0.0", "train.eval_iters=1", "log.progress=false",
            "log.plot=false", "checkpoint.save=false", "checkpoint.resume=none", f"log.dir={run_dir}",
            "train.warmup=2"]
    return RunConfig.load(recipe, base + list(overrides))


def metrics(run_dir) -> list[dict]:
    return [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]


def grad_norms(run_dir) -> list[float]:
    return [r["grad_norm"] for r in metrics(run_dir) if r.get("split", "train") == "train"]


def train_losses(run_dir) -> list[float]:
    return [r["loss"] for r in metrics(run_dir) if r.get("split", "train") == "train"]


def run_case(cfg: RunConfig) -> dict:
    """Train; return the losses and the full (tp-gathered) final parameters (rank function)."""
    trainer = Trainer(cfg)
    try:
        summary = trainer.fit()
        params = {}
        for model in trainer.chunks:  # interleaved pipelining: several chunks (stored names are global)
            for name, value in full_state(model, trainer.ctx).items():
                assert name not in params, f"{name} in two chunks"
                params[name] = value
    finally:
        trainer.close()
    return {"losses": summary["losses"], "params": {k: v.float() for k, v in params.items()},
            "valid": summary["valid_loss"]}


@contextlib.contextmanager
def one_thread():
    """Like each spawned rank, use one torch thread (2 shared cores; faster and less noisy)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def run_cases(cases: dict) -> dict:
    torch.manual_seed(0)
    with one_thread():
        return {name: run_case(cfg) for name, cfg in cases.items()}
