"""Experiment trackers a run can feed besides metrics.jsonl: TensorBoard (`log.tensorboard=true`) and
Weights & Biases (`log.wandb=true`). Each is an optional extra (`pip install 'megazoo[tensorboard]'`,
`'megazoo[wandb]'`); asking for one that is not installed is refused before any rank starts, in one
line naming the key and the install command, so a long run never ends without the curves it was
meant to write.

    writers = open_trackers(cfg.log, run_dir, cfg.to_dict())
    for w in writers: w.scalars(record)   # every metrics.jsonl record: train/<key>, valid/<key>
    for w in writers: w.close()
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from megazoo.core.train.errors import ConfigError

# key -> (module that must import, the extra that installs it)
TRACKERS = {"tensorboard": ("tensorboard", "tensorboard"), "wandb": ("wandb", "wandb")}


def check_trackers(log) -> None:
    """Refuse `log.tensorboard` / `log.wandb` when its package is missing (before any rank starts)."""
    for key, (module, extra) in TRACKERS.items():
        if getattr(log, key, False) and importlib.util.find_spec(module) is None:
            raise ConfigError(f"log.{key}=true needs the `{module}` package, which is not installed: "
                              f"pip install 'megazoo[{extra}]' (or set log.{key}=false)")


def _numbers(record: dict) -> dict:
    tag = record.get("split", "train")
    return {f"{tag}/{k}": v for k, v in record.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "step"}


class TensorBoardTracker:
    def __init__(self, run_dir: Path):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(Path(run_dir) / "tensorboard"))

    def scalars(self, record: dict) -> None:
        for k, v in _numbers(record).items():
            self.writer.add_scalar(k, v, record["step"])

    def close(self) -> None:
        self.writer.close()


class WandbTracker:
    """One W&B run per megazoo run: named after the run folder, its resolved config attached, files in
    <run>/wandb. WANDB_MODE=offline (or WANDB_API_KEY unset and `wandb offline`) keeps it local."""

    def __init__(self, run_dir: Path, project: str | None, config: dict):
        import wandb

        self.wandb = wandb
        self.run = wandb.init(project=project or "megazoo", name=Path(run_dir).name, dir=str(run_dir),
                              config=config, resume="allow")

    def scalars(self, record: dict) -> None:
        self.run.log(_numbers(record), step=record["step"])

    def close(self) -> None:
        self.run.finish()


def open_trackers(log, run_dir: Path, config: dict) -> list:
    """The trackers `log` asks for (checked by `check_trackers` earlier), opened on rank 0."""
    check_trackers(log)
    out = []
    if getattr(log, "tensorboard", False):
        out.append(TensorBoardTracker(run_dir))
    if getattr(log, "wandb", False):
        out.append(WandbTracker(run_dir, getattr(log, "wandb_project", None), config))
    return out
