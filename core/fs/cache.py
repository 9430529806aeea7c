"""The user cache: derived files megazoo can always make again (tokenizer copies, corpus .bin files,
sample indices, dequantised GGUF models, the WordNet copy, generated `evaluate` modules).

    cache_root()                          # $MEGAZOO_CACHE, else $XDG_CACHE_HOME/megazoo, else ~/.cache/megazoo
    folder = cached_folder(path, build)   # PATH, made once by build(scratch) and renamed into place

A cached folder is complete or absent: it is built in a marked scratch folder beside it and renamed
into place, so a reader never sees half of it, a killed build leaves scratch that the next build
removes, and when two processes build it at once the first rename wins and the other copy is dropped.
Key the folder's name by what it is made from (a content hash, library versions): a cached folder
is never rebuilt in place.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

from megazoo.core.fs.atomic import SCRATCH_MARKER, scratch_folder, sweep_stale


def cache_root() -> Path:
    """Where megazoo keeps what it can make again: $MEGAZOO_CACHE, else $XDG_CACHE_HOME/megazoo,
    else ~/.cache/megazoo."""
    if os.environ.get("MEGAZOO_CACHE"):
        return Path(os.environ["MEGAZOO_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "megazoo"


def cached_folder(folder: str | os.PathLike, build: Callable[[Path], None]) -> Path:
    """`folder`, made by `build(scratch)` when it is missing: `build` writes the folder's files into
    `scratch`, which then replaces the missing folder in one rename."""
    folder = Path(folder)
    if folder.is_dir():  # only a complete build is ever renamed into place
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(folder)
    tmp = scratch_folder(folder)
    try:
        build(tmp)
        try:
            os.rename(tmp, folder)  # onto a missing (or empty) folder only: never over another build's files
        except OSError:
            if not folder.is_dir():
                raise
        else:
            (folder / SCRATCH_MARKER).unlink(missing_ok=True)  # after the rename: a killed build stays marked
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
