"""The trainer's checkpoints, through megazoo.core.checkpoint (sharded, atomic, layout-independent).

Each rank describes what it holds as a checkpoint state (see megazoo.core.checkpoint.spec):

    model/<name>                 the rank's tp slice of every parameter (vocabulary padding dropped)
    optimizer/exp_avg/<name>     Adam moments of the part of <name> this rank updates: the whole
    optimizer/exp_avg_sq/<name>  local parameter, or its ZeRO-1 range of the flattened parameter
    optimizer/main/<name>        fp32 main weights (bf16/fp16 runs only; fp32 runs update the model)
                                 (optimizer entries exist for trainable parameters only: a frozen
                                 one, see train.trainable, is stored under model/ alone)
    optimizer/step, scheduler, scaler, step, consumed_samples, skipped, losses   plain JSON values
    rng                          CPU (+CUDA) and per-chunk tracker generator states, per rank

Every stored tensor is in its global (TP=1, real vocabulary) shape under the model's global
parameter names, so a checkpoint saved at any (tp, pp, dp, vpp, distributed optimizer) loads at
any other valid layout; only the RNG streams (per rank by nature) are restored at an unchanged
layout alone. The checkpoint's meta holds `architecture(arch, model config)` plus the vocabulary
and tokenizer; loading checks them and names what differs.
"""

from __future__ import annotations

from pathlib import Path

import torch

from megazoo.core.checkpoint import (AsyncCheckpointer, architecture, load_checkpoint, model_state, named_parameters,
                                     resolve_resume, rng_state, save_checkpoint, set_rng_state)
from megazoo.core.checkpoint.api import open_checkpoint
from megazoo.core.checkpoint.spec import copy_state
from megazoo.core.checkpoint.storage import iter_name
from megazoo.core.fs import write_text_atomic


def expected_meta(trainer) -> dict:
    """What a checkpoint must match to be loaded by this run (also stored in its meta)."""
    model = trainer.builder.to_dict()
    return architecture(model.get("arch"), model, vocab_size=trainer.builder.vocab_size,
                        tokenizer=trainer.cfg.data.tokenizer)


def checkpoint_meta(trainer) -> dict:
    """Stored in meta.json. "model" is the whole model config (`expected_meta` compares its
    architecture fields only), so whole-model readers (load_full_model_state) can rebuild it."""
    return {**expected_meta(trainer), "model": trainer.builder.to_dict(), "step": trainer.step,
            "consumed_samples": trainer.consumed_samples,
            "dtype": trainer.cfg.precision.dtype, "distributed_optimizer": trainer.cfg.shard_mode() != "none",
            "shard": trainer.cfg.shard_mode(),
            "name": trainer.cfg.name, **({"task": trainer.builder.task_dict() | {"name": trainer.cfg.task.get("name")}}
                                         if trainer.cfg.task else {})}


def _rng_trackers(trainer) -> dict:
    """The RNG trackers of the trainer's chunks, by chunk index (the stored key)."""
    return {str(i): m.rng for i, m in enumerate(trainer.chunks) if getattr(m, "rng", None) is not None}


def _model_state(trainer) -> dict:
    """The model's checkpoint entries: its parameters, where ZeRO-3 holds slices of them, the slices."""
    return {**model_state(trainer.chunks, trainer.ctx), **trainer.optimizer.sharded_model_state()}


def training_state(trainer) -> dict:
    """This rank's whole training state as a checkpoint state (tensors are views: save reads them,
    load fills them in place)."""
    return {"model": _model_state(trainer), "optimizer": trainer.optimizer.sharded_state_dict(),
            "scheduler": trainer.schedule.state_dict(), "scaler": trainer.scaler.state_dict(),
            "step": trainer.step, "consumed_samples": trainer.consumed_samples, "skipped": trainer.skipped,
            "losses": [float(x) for x in trainer.losses], "rng": rng_state(trackers=_rng_trackers(trainer))}


@torch.no_grad()
def apply_state(trainer, state: dict, restore_rng: bool = True) -> None:
    """Make `state` (a loaded `training_state`) the trainer's: model tensors, the optimizer's state
    (which then refreshes the model's trained weights from its main weights), scaler, schedule,
    progress and, when asked, the RNG streams."""
    # the model first: the optimizer then overwrites its trained weights from the main weights
    copy_state({"model": _model_state(trainer)}, state)
    trainer.optimizer.load_sharded_state_dict(state["optimizer"])
    trainer.scaler.load_state_dict(state["scaler"])
    trainer.schedule.load_state_dict(state["scheduler"])
    trainer.step, trainer.consumed_samples = int(state["step"]), int(state["consumed_samples"])
    trainer.skipped, trainer.losses = int(state.get("skipped", 0)), [float(x) for x in state.get("losses", [])]
    if restore_rng:
        set_rng_state(state["rng"], trackers=_rng_trackers(trainer))


def save(trainer, saver: AsyncCheckpointer | None = None) -> Path:
    """Collective: every rank writes its shards of ROOT/iter_<step>; the newest `keep` are kept.

    With `saver`, the state is copied to CPU memory and written in the background (the previous
    background save is waited for first); the returned path is committed once `saver.wait()` returns.
    """
    cfg = trainer.cfg
    root = Path(cfg.checkpoint_dir())
    if saver is not None:
        saver.save(root, trainer.step, training_state(trainer), meta=checkpoint_meta(trainer),
                   keep=cfg.checkpoint.keep)
        return root / iter_name(trainer.step)
    return save_checkpoint(root, trainer.step, training_state(trainer), trainer.ctx,
                           meta=checkpoint_meta(trainer), keep=cfg.checkpoint.keep)


class BestTracker:
    """checkpoint.best_metric: after each validation, a checkpoint whose metric beats every earlier
    one is saved under <checkpoint dir>/best (one kept; `best.json` beside it says which step and
    value). The run's own checkpoints and `resume=auto` do not look there."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.metric = cfg.checkpoint.best_metric
        mode = cfg.checkpoint.best_mode
        self.higher = mode == "max" or (mode == "auto" and self.metric not in ("loss", "ppl"))
        self.value: float | None = None
        self.step: int | None = None
        path = self.root / "best.json"
        if self.metric and path.is_file():  # a resumed run keeps beating its earlier best
            import json

            saved = json.loads(path.read_text())
            if saved.get("metric") == self.metric:
                self.value, self.step = saved.get("value"), saved.get("step")

    @property
    def root(self) -> Path:
        return Path(self.cfg.checkpoint_dir()) / "best"

    def update(self, trainer, record: dict) -> bool:
        if not self.metric or not self.cfg.checkpoint.save:
            return False
        if self.metric not in record:
            from megazoo.core.train.errors import ConfigError

            known = sorted(k for k, v in record.items() if isinstance(v, (int, float)) and k != "step")
            raise ConfigError(f"checkpoint.best_metric={self.metric!r} is not a validation metric of this run "
                              f"(it has: {', '.join(known)})")
        value = float(record[self.metric])
        better = self.value is None or (value > self.value if self.higher else value < self.value)
        if not better:
            return False
        self.value, self.step = value, trainer.step
        save_checkpoint(self.root, trainer.step, training_state(trainer), trainer.ctx, meta=checkpoint_meta(trainer),
                        keep=1)
        if trainer.ctx.rank == 0:
            from megazoo.core.checkpoint.storage import write_json

            write_json(self.root / "best.json", {"metric": self.metric, "value": value, "step": trainer.step,
                                                 "higher_is_better": self.higher})
        return True

    def summary(self) -> dict | None:
        if not self.metric or self.value is None:
            return None
        return {"metric": self.metric, "value": self.value, "step": self.step, "path": str(self.root)}


def find_checkpoint(resume, directory: str | Path) -> Path | None:
    """`auto`: the newest complete checkpoint under `directory` (None if none); `none`: None; else
    the given checkpoint (or the newest one under the given folder)."""
    if resume in (None, "", False):
        return None
    return resolve_resume(Path(directory), resume)


LOW = ("bf16", "fp16")


def _precision_template(state: dict, saved: str, now: str, frozen: set[str] = frozenset()) -> dict:
    """The training state to load a checkpoint saved in another precision into (views of this
    trainer's tensors, rearranged): the fp32 weights of the checkpoint (its model in an fp32 run,
    its main weights otherwise) fill this run's fp32 weights (its main weights in a bf16/fp16 run,
    its model otherwise); the loss scaler starts afresh. `frozen` parameters have no main weights
    on either side: they load from the stored model as they are (cast to this run's dtype)."""
    state = dict(state, optimizer=dict(state["optimizer"]))
    state.pop("scaler")
    model = state.pop("model")
    kept = {k: v for k, v in model.items() if k in frozen}
    if saved not in LOW and now in LOW:  # fp32 -> low: the stored model is the fp32 master copy
        state["model"] = {**kept, **state["optimizer"].pop("main")}
    elif saved in LOW and now not in LOW:  # low -> fp32: load the stored main weights into the model
        state["optimizer"]["main"] = {k: v for k, v in model.items() if k not in frozen}
    # bf16 <-> fp16: main weights as they are; the low-precision model is derived from them
    if kept and "model" not in state:
        state["model"] = kept
    return state


def frozen_names(trainer) -> set[str]:
    """Stored names of the parameters this run does not train (train.trainable)."""
    return {name for name, p in named_parameters(trainer.chunks).items() if not p.requires_grad}


def load(trainer, path: str | Path) -> dict:
    """Collective: fill the trainer from the checkpoint at `path` (saved at any layout and in any
    precision); returns the checkpoint's info (path, step, meta, layout, per_rank_restored and,
    when the precision changed, precision_from)."""
    now = trainer.cfg.precision.dtype
    _, record = open_checkpoint(path)
    saved = record["meta"].get("dtype", now)
    template = training_state(trainer)
    if saved == now:
        state, info = load_checkpoint(path, template, trainer.ctx, expect=expected_meta(trainer))
    else:
        frozen = frozen_names(trainer)
        # loading frozen weights from the stored low-precision model leaves its trainable entries
        # unread (they come from the main weights), which strict loading would refuse
        loaded, info = load_checkpoint(path, _precision_template(template, saved, now, frozen), trainer.ctx,
                                       expect=expected_meta(trainer), strict=not (frozen and saved in LOW))
        # tensors were filled in place (views of this trainer's); take the plain values
        state = dict(loaded, model=template["model"], scaler=template["scaler"],
                     optimizer=dict(template["optimizer"], step=loaded["optimizer"]["step"]))
        info["precision_from"] = saved
    apply_state(trainer, state, restore_rng=info["per_rank_restored"])
    return info


def trim_metrics(run_dir: Path, step: int) -> None:
    """Drop the metrics.jsonl lines a killed run logged after the checkpoint it resumes from, so
    the resumed run appends its steps after `step` exactly once."""
    import json

    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        return
    kept = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # a line cut by the kill
            continue
        if isinstance(record, dict) and record.get("step", 0) <= step:
            kept.append(line)
    write_text_atomic(path, "".join(line + "\n" for line in kept))
