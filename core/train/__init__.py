"""The trainer loop, run directory, logging, FLOPs/MFU and the `megazoo train` command.

    from megazoo.core.train import RunConfig, Trainer, train
    cfg = RunConfig.load("gpt-tiny", ["train.steps=20", "parallel.tp=2"])
    summary = train(cfg)            # inside each rank (torch.distributed initialised when world > 1)
    # or: Trainer(cfg) for step-by-step control, state_dict()/load_state_dict()
"""

from megazoo.core.train.config import ConfigError, RunConfig
from megazoo.core.train.trainer import Trainer, TrainingStopped, train

__all__ = ["ConfigError", "RunConfig", "Trainer", "TrainingStopped", "train"]
