"""`megazoo train RECIPE [--set k=v ...] [--nproc N]`.

The config is loaded, overridden and validated for the requested world size in this process, so a
wrong key, type or layout fails before any rank starts. `--nproc N` then starts N local ranks with
torch.distributed's elastic launcher (the engine behind torchrun); `torchrun -m megazoo train ...`
works as well (each rank finds WORLD_SIZE in its environment).
"""

from __future__ import annotations

import argparse
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recipe", help="a YAML recipe path, or the name of a shipped recipe (e.g. gpt-tiny)")
    parser.add_argument("--set", dest="overrides", nargs="+", action="append", default=[], metavar="KEY=VALUE",
                        help="dotted overrides, e.g. --set train.steps=20 parallel.tp=2 (repeatable)")
    parser.add_argument("--nproc", type=int, default=None, help="number of local ranks to start")


def _error(msg: str) -> int:
    print(f"megazoo train: error: {msg}", file=sys.stderr)
    return 2


def run(args) -> int:
    from megazoo.core.train.config import ConfigError, RunConfig

    overrides = [item for group in args.overrides for item in group]
    env_world = int(os.environ.get("WORLD_SIZE", "1"))
    under_launcher = "LOCAL_RANK" in os.environ and env_world > 1
    nproc = args.nproc or 1
    if nproc < 1:
        return _error(f"--nproc must be >= 1, got {nproc}")
    try:
        cfg = RunConfig.load(args.recipe, overrides)
        cfg.validate(env_world if under_launcher else nproc)
    except ConfigError as e:
        return _error(str(e))
    if under_launcher or nproc == 1:
        return _run_here(cfg.to_dict())
    return launch(cfg, nproc)


def _run_here(cfg_dict: dict) -> int:
    """Run in this process: a single process, or one rank started by a launcher."""
    import torch
    import torch.distributed as dist

    from megazoo.core.parallel.context import init_distributed
    from megazoo.core.train.config import RunConfig
    from megazoo.core.train.flops import cpu_count
    from megazoo.core.train.trainer import TrainingStopped, train

    rank, world = init_distributed()
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    if world > 1 and "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(max(1, cpu_count() // local))
    try:
        train(RunConfig.from_dict(cfg_dict))
    except (TrainingStopped, ValueError, FileNotFoundError) as e:
        if rank == 0:
            print(f"megazoo train: error: {e}", file=sys.stderr)
        return 1
    finally:
        if world > 1 and dist.is_initialized():
            dist.destroy_process_group()
    return 0


def _rank_entry(cfg_dict: dict) -> int:
    code = _run_here(cfg_dict)
    if code:
        raise SystemExit(code)
    return code


def launch(cfg, nproc: int) -> int:
    """Start `nproc` local ranks with torch.distributed's elastic launcher and train in each."""
    import uuid

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    from megazoo.core.parallel.launch import free_port

    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=nproc, run_id=str(uuid.uuid4()),
                          rdzv_backend="c10d", rdzv_endpoint=f"127.0.0.1:{free_port()}", max_restarts=0,
                          monitor_interval=0.5)
    try:
        elastic_launch(config, _rank_entry)(cfg.to_dict())
    except ChildFailedError as e:
        print(f"megazoo train: error: {len(e.failures)} rank(s) failed (messages above)", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SignalException):
        # the launcher has already stopped every rank (SIGINT, then SIGKILL after its grace period)
        print(f"\nmegazoo train: interrupted; all {nproc} ranks stopped. The partial run is in {cfg.run_dir()} "
              f"(its last complete checkpoint, if any, resumes with checkpoint.resume=auto)", file=sys.stderr)
        return 130
    return 0
