"""Whole (unsharded) model weights in and out of a checkpoint, in one process (HF import/export).

The stored model tensors already are the TP=1 master tensors of the real vocabulary under global
parameter names, so reading them back needs no knowledge of the layout that saved them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.distributed.checkpoint as dcp

from megazoo.core.checkpoint import storage as S
from megazoo.core.checkpoint.api import _write, dcp_errors, open_checkpoint, verify_files
from megazoo.core.checkpoint.planner import ChunkLoadPlanner, SafeFileSystemReader
from megazoo.core.checkpoint.spec import SEP, Entry, Piece, flatten
from megazoo.core.parallel.context import ParallelContext

MODEL = "model"


def _single() -> ParallelContext:
    return ParallelContext(device=torch.device("cpu"))


def load_full_model_state(ckpt_dir: str | Path, verify: bool = True) -> tuple[dict, dict[str, torch.Tensor]]:
    """(info, name -> full tensor) of the model in a checkpoint (or the newest one under a root).

    info: path, step, meta (what save passed: arch, model config, vocab, ...) and layout.
    Names are the model's parameter names (a tied output head is not stored separately).
    """
    path, meta = open_checkpoint(ckpt_dir)
    ctx = _single()
    verify_files(path, meta, ctx, verify)
    entries = {}
    for key, t in meta["tensors"].items():
        if key.startswith(MODEL + SEP):
            full = torch.empty(t["shape"], dtype=getattr(torch, t["dtype"]))
            entries[key] = Entry(key, tuple(t["shape"]), full.dtype, [Piece((0,) * full.dim(), tuple(full.shape), full)]
                                 if full.numel() else [])
    with dcp_errors():
        dcp.load(entries, storage_reader=SafeFileSystemReader(path, S.manifest(path, meta)),
                 planner=ChunkLoadPlanner(entries), no_dist=True)
    info = {"path": str(path), "step": meta["step"], "meta": meta["meta"], "layout": meta["layout"]}
    return info, {k[len(MODEL) + 1:]: e.pieces[0].view if e.pieces else torch.empty(e.global_shape)
                  for k, e in entries.items()}


def save_full_model_state(root: str | Path, state_dict: dict[str, torch.Tensor], meta: dict[str, Any],
                          step: int = 0, extra: dict[str, Any] | None = None, keep: int | None = None) -> Path:
    """Write full model weights (name -> TP=1 tensor of the real vocabulary) as a checkpoint under
    `root`, loadable at any layout by `load_checkpoint` with a template holding `{"model": ...}`.

    Single process. `extra` adds plain values (e.g. {"step": 0, "consumed_samples": 0}).
    """
    state = {MODEL: {k: v.detach().cpu() for k, v in state_dict.items()}, **(extra or {})}
    return _write(Path(root), step, flatten(state), _single(), dict(meta), keep, None)
