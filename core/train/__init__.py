"""The trainer loop, run directory, logging, FLOPs/MFU and the `megazoo train` command.

    from megazoo.core.train import RunConfig, Trainer, train
    cfg = RunConfig.load("gpt-tiny", ["train.steps=20", "parallel.tp=2"])
    summary = train(cfg)            # inside each rank (torch.distributed initialised when world > 1)
    # or: Trainer(cfg) for step-by-step control, state_dict()/load_state_dict()
"""


# loaded on first use (PEP 562), so that importing a light module of the package (stages.py, a task's
# STAGES table, rows.py) does not load torch and the trainer
_LAZY = {"ConfigError": "config", "RunConfig": "config", "Trainer": "trainer", "TrainingStopped": "trainer",
         "train": "trainer"}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
