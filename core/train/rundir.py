"""A run directory belongs to one run, lies where the user named it, and can be written: checked
before the first step, so a mistake costs seconds rather than a whole run.

    check_name(name)                    # `name` makes runs/<name>: a plain folder name only
    check_one_run(cfg, resume_folder)   # no second run mixed into an earlier run's folder
    own_checkpoint(cfg, resume_folder)  # the run continues its own folder's checkpoint
    check_writable(cfg, monitor)        # log.dir and checkpoint.dir can be created and written
    check_space(cfg, state)             # the checkpoint disk holds at least one more checkpoint

Every failure is a ConfigError naming the key, the folder and what to do.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from megazoo.core.train.errors import ConfigError


def check_name(name) -> str:
    """The run name as a folder name under runs/: no separator, no `..`, not absolute."""
    text = str(name)
    if text in ("", ".", "..") or any(c in text for c in "/\\\0") or Path(text).is_absolute():
        raise ConfigError(f"name={text!r} is not a plain folder name (the run would be written to runs/{text}); "
                          f"use letters, digits, '-', '_' or '.', or set log.dir to choose the folder itself")
    return text


def _inside(path: Path, folder: Path) -> bool:
    path, folder = Path(path).resolve(), Path(folder).resolve()
    return path == folder or folder in path.parents


def own_checkpoint(cfg, resume_folder) -> bool:
    """Whether the run continues from a checkpoint of its own folder (checkpoint.dir)."""
    return resume_folder is not None and _inside(resume_folder, Path(cfg.checkpoint_dir()))


def check_one_run(cfg, resume_folder, monitor: bool = True) -> None:
    """Refuse to start a run in a folder that holds another run's checkpoints or metrics (the
    checkpoints would be overwritten and metrics.jsonl would hold two runs interleaved): a run
    continues only from its own checkpoint folder. A run that writes nothing there (no monitor,
    no checkpoints) mixes nothing."""
    from megazoo.core.checkpoint.storage import iter_dirs

    ckpt, run = Path(cfg.checkpoint_dir()), Path(cfg.run_dir())
    if not (monitor or cfg.checkpoint.save):
        return
    if own_checkpoint(cfg, resume_folder):
        return  # continuing this folder's own run (history.check_rerun compares its settings)
    earlier = []
    iters = iter_dirs(ckpt)
    if iters:
        earlier.append(f"checkpoints {iters[0][1].name}..{iters[-1][1].name} in {ckpt}" if len(iters) > 1
                       else f"checkpoint {iters[0][1]}")
    metrics = run / "metrics.jsonl"
    if metrics.is_file() and metrics.stat().st_size > 0:
        earlier.append(str(metrics))
    if not earlier:
        return
    resume = cfg.checkpoint.resume
    start = (f"resuming from {resume_folder} (another run's checkpoint)" if resume_folder is not None
             else f"starting afresh (checkpoint.resume={resume})" if iters or resume != "auto"
             else "starting afresh (no checkpoint to continue from)")
    hint = "Continue that run with checkpoint.resume=auto, give" if iters else "Give"
    raise ConfigError(f"run directory {run} already holds an earlier run ({'; '.join(earlier)}); {start} there would "
                      f"mix two runs. {hint} this run its own log.dir (or name), or move the earlier run away")


def _writable(folder: Path, key: str) -> None:
    folder = Path(folder)
    for part in [folder, *folder.parents]:
        if part.exists() or part.is_symlink():
            if not part.is_dir():
                raise ConfigError(f"{key}={folder}: {part} is a file, not a folder; choose another {key}")
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".megazoo-write-test-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise ConfigError(f"{key}={folder}: cannot write there ({e.strerror or e}); choose a writable folder "
                          f"for {key}") from None


def check_writable(cfg, monitor: bool = True) -> None:
    """The folders this run writes exist (created now) and accept a file."""
    if monitor:
        _writable(cfg.run_dir(), "log.dir")
    if cfg.checkpoint.save:
        _writable(cfg.checkpoint_dir(), "checkpoint.dir")


def check_space(cfg, state: dict) -> None:
    """Saving writes a new checkpoint before the oldest is removed: its disk must hold one more."""
    if not cfg.checkpoint.save:
        return
    from megazoo.core.checkpoint.api import checkpoint_bytes

    folder = Path(cfg.checkpoint_dir())
    need = checkpoint_bytes(state)
    free = shutil.disk_usage(folder).free
    if free < need:
        raise ConfigError(f"checkpoint.dir={folder}: {free / 2**20:.1f} MiB free on its disk, but a checkpoint of "
                          f"this run takes about {need / 2**20:.1f} MiB (no space left on device for it); free space "
                          f"or set checkpoint.dir to another disk")


def _prefixes(path) -> list[str]:
    """The .bin/.idx prefixes named by data.path: one prefix, or [weight, prefix, weight, prefix, ...]."""
    if path in (None, "", []):
        return []
    if isinstance(path, (list, tuple)):
        return [str(p) for p in path if isinstance(p, (str, os.PathLike))]
    return [str(path)]


def check_outputs(cfg) -> None:
    """The output policy (core/fs/policy.py) for the folders a recipe names: log.dir and
    checkpoint.dir must not be, lie inside or contain what the run reads (train.init_from, the
    data.path files, a data.tokenizer folder), nor the working or home folder. A run directory is
    resumable: an existing one is continued (check_one_run refuses one that holds another run)."""
    from megazoo.core.fs import Declared, PathRole, check_paths, resolve

    inputs = []
    if cfg.train.init_from:
        inputs.append(Declared("train.init_from", str(cfg.train.init_from), PathRole("input", "folder")))
    for prefix in _prefixes(cfg.data.path):
        for suffix in (".bin", ".idx"):
            inputs.append(Declared("data.path", prefix + suffix, PathRole("input", "file")))
    tokenizer = str(cfg.data.tokenizer or "")
    spec = tokenizer.split(":", 1)[1] if ":" in tokenizer else tokenizer
    if spec and os.path.exists(spec):  # a tokenizer folder or file (not a name like gpt2)
        inputs.append(Declared("data.tokenizer", spec, PathRole("input", "any")))
    run_dir = cfg.run_dir()
    outputs = [Declared("log.dir", str(run_dir), PathRole("output", "folder", resumable=True))]
    if cfg.checkpoint.save and resolve(cfg.checkpoint_dir()) != resolve(run_dir):
        outputs.append(Declared("checkpoint.dir", str(cfg.checkpoint_dir()), PathRole("output", "folder",
                                                                                    resumable=True)))
    try:
        check_paths(inputs, outputs, overwrite=False)
    except ValueError as e:
        raise ConfigError(str(e)) from None
