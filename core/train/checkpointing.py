"""The trainer's checkpoint hooks: a minimal implementation (one file per rank, atomic rename, a
`latest` pointer, keep the last N) that megazoo.core.checkpoint will replace with sharded,
resharding saves. The trainer only calls `save_checkpoint` and `load_checkpoint`.

Layout: <dir>/step_<N:08d>/rank_<r:05d>.pt and <dir>/latest (text: the step folder's name).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch
import torch.distributed as dist


def _barrier(world_size: int) -> None:
    if world_size > 1:
        dist.barrier()


def save_checkpoint(state: dict, directory: str | Path, step: int, rank: int, world_size: int, keep: int = 2) -> Path:
    """Every rank writes its own file; rank 0 then moves `latest` and prunes old steps."""
    directory = Path(directory)
    folder = directory / f"step_{step:08d}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"rank_{rank:05d}.pt"
    tmp = target.with_suffix(".pt.tmp")
    torch.save(state, tmp)
    os.replace(tmp, target)  # atomic: a crash leaves the previous file or the new one, never half
    _barrier(world_size)
    if rank == 0:
        latest_tmp = directory / "latest.tmp"
        latest_tmp.write_text(folder.name)
        os.replace(latest_tmp, directory / "latest")
        steps = sorted(p for p in directory.glob("step_*") if p.is_dir())
        for old in steps[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    _barrier(world_size)
    return folder


def find_checkpoint(resume: str, directory: str | Path) -> Path | None:
    """`auto`: the latest step in `directory` if any; `none`: None; else the given folder."""
    if resume in (None, "none", "", False):
        return None
    if resume == "auto":
        latest = Path(directory) / "latest"
        if not latest.is_file():
            return None
        return Path(directory) / latest.read_text().strip()
    path = Path(resume)
    if (path / "latest").is_file():
        path = path / (path / "latest").read_text().strip()
    if not path.is_dir():
        raise FileNotFoundError(f"checkpoint.resume={resume!r}: no checkpoint folder there")
    return path


def load_checkpoint(folder: str | Path, rank: int) -> dict:
    path = Path(folder) / f"rank_{rank:05d}.pt"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: this checkpoint has no file for rank {rank}; it was saved with another "
                                "world size (resharding arrives with megazoo.core.checkpoint)")
    return torch.load(path, map_location="cpu", weights_only=False)
