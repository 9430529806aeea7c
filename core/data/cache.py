"""On-disk cache of sample indices, keyed by a hash of what they were built from.

As in Megatron, each built index set is stored as `<hash>-<Class>-<split>-<name>.npy` next to a
`description.txt` holding the JSON description the hash was taken of. Files are written under
temporary names and renamed, the description last, so a reader that finds the description finds
complete arrays; ranks that build the same indices at once write identical bytes, so whichever
rename lands last changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

import numpy as np

from megazoo.core.fs import atomic_file, write_text_atomic


def file_digest(path: str | os.PathLike, chunk: int = 8 << 20) -> str:
    """md5 of a file's bytes (ties cached indices to the exact .idx they were built from)."""
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def describe(desc: dict) -> tuple[str, str]:
    text = json.dumps(desc, indent=2, sort_keys=True, default=str)
    return text, hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def cached_arrays(cache_dir: str | os.PathLike | None, kind: str, split: str, desc: dict,
                  names: tuple[str, ...], build: Callable[[], tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """Load the arrays `names` for `desc` from the cache, or build and store them.

    Loaded arrays are memory-mapped read-only. `cache_dir=None` builds in memory only.
    """
    text, digest = describe(desc)
    if cache_dir is None:
        return build()
    root = Path(cache_dir)
    base = f"{digest}-{kind}-{split}"
    paths = [root / f"{base}-{name}.npy" for name in names]
    desc_path = root / f"{base}-description.txt"
    if desc_path.is_file() and all(p.is_file() for p in paths):
        try:
            return tuple(np.load(p, mmap_mode="r", allow_pickle=False) for p in paths)
        except (ValueError, OSError):
            pass  # damaged cache entry: rebuild it below
    arrays = build()
    try:
        root.mkdir(parents=True, exist_ok=True)
        for path, arr in zip(paths, arrays):
            with atomic_file(path) as f:
                np.save(f, np.ascontiguousarray(arr), allow_pickle=False)
        write_text_atomic(desc_path, text)
    except OSError:
        pass  # a read-only cache location only costs the rebuild next time
    return arrays
