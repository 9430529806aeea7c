"""Atomic file writes, the one helper for every writer in megazoo (checkpoints, data caches,
tokenizer files, model folders, task outputs): a reader sees the old content or the new one,
never a half-written file, and a failed write leaves no temporary file behind.

    write_text_atomic(path, text)                   # or write_bytes_atomic / write_json_atomic
    write_json_atomic(path, obj, fsync=True)        # durable across a power loss (checkpoints)
    with atomic_file(path) as f: np.save(f, array)  # any writer that takes a binary file
    with atomic_folder(out_dir) as tmp: ...         # a whole folder (model exports, tokenizers)

The temporary file sits beside the target (os.replace is atomic only within one file system), has
a unique name ending in `.tmp` (concurrent writers do not collide, and checkpoint clean-up knows
the suffix) and the usual permissions (created like open() does, not 0600 as mkstemp makes it).
With fsync=True the data is flushed to disk before the rename and the directory after it, so the
rename itself survives a crash.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator


def fsync_path(path: str | os.PathLike) -> None:
    """fsync a file or a directory (a rename is durable only once its directory is synced)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "wb", fsync: bool = False,
                encoding: str | None = None) -> Iterator[IO]:
    """Open a temporary sibling of `path` for writing; on success it replaces `path`."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{secrets.token_hex(4)}.tmp")
    if "b" not in mode and encoding is None:
        encoding = "utf-8"
    try:
        with open(tmp, mode.replace("w", "x"), encoding=encoding) as f:  # x: never reuse a file
            yield f
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if fsync:
        fsync_path(path.parent)


def write_bytes_atomic(path: str | os.PathLike, data: bytes, fsync: bool = False) -> None:
    with atomic_file(path, "wb", fsync) as f:
        f.write(data)


def write_text_atomic(path: str | os.PathLike, text: str, fsync: bool = False, encoding: str = "utf-8") -> None:
    with atomic_file(path, "w", fsync, encoding) as f:
        f.write(text)


def write_json_atomic(path: str | os.PathLike, obj, fsync: bool = False, **dumps) -> None:
    """`obj` as JSON (json.dumps keyword arguments in `dumps`; default indent=1) and a newline."""
    dumps.setdefault("indent", 1)
    write_text_atomic(path, json.dumps(obj, **dumps) + "\n", fsync)


def inside(folder: str | os.PathLike, name) -> bool:
    """`name` is a plain file name (no folder part, no `..`, not absolute) of a file that, links
    followed, lies directly in `folder`: the only names a checkpoint or index may give its files."""
    if not isinstance(name, str) or name in ("", ".", "..") or any(c in name for c in "/\\\0"):
        return False
    folder = Path(folder).resolve()
    return (folder / name).resolve().parent == folder


def check_apart(source: str | os.PathLike, out: str | os.PathLike, inside_ok: bool = False) -> None:
    """Refuse (ValueError) an output folder that is or contains the input `source` (replacing it
    would delete the input) or lies inside it (it would replace or mix into part of the input;
    `inside_ok` allows that where only a new folder can be added, as without --overwrite).
    Links are followed."""
    src, dst = Path(source).resolve(), Path(out).resolve()
    if src == dst:
        relation = "is"
    elif src in dst.parents:
        if inside_ok:
            return
        relation = "lies inside"
    elif dst in src.parents:
        relation = "contains"
    else:
        return
    raise ValueError(f"the output folder {out} {relation} the input {source}; writing it would replace or "
                     f"damage the input. Choose an output folder outside {source} (nothing was changed)")


@contextmanager
def atomic_folder(out: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Write into a temporary sibling folder and move it into place only when complete, so a
    failure leaves nothing half-written and an existing folder is replaced only on success (a
    non-empty one only with `overwrite`)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} exists and is not empty; choose another folder or pass --overwrite")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
