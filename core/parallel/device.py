"""The one place that decides device and backend: CUDA gives nccl, anything else gloo."""

from __future__ import annotations

import os

import torch


def pick_device(local_rank: int | None = None) -> torch.device:
    """The device this rank computes on: its GPU when CUDA is present, else the CPU."""
    if torch.cuda.is_available():
        if local_rank is None:
            local_rank = int(os.environ.get("LOCAL_RANK", 0))
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device("cpu")


def pick_backend() -> str:
    """nccl on CUDA, gloo otherwise (every collective the core needs runs on gloo)."""
    return "nccl" if torch.cuda.is_available() else "gloo"


def synchronize(device: torch.device) -> None:
    """Wait for queued work on `device` (a no-op on the CPU); used around timers."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return "cpu"
