"""The checkpoint directory: crash-safe commit, the `latest` marker, retention, discovery.

    ROOT/iter_0000010/        a complete checkpoint: DCP shard files, .metadata, meta.json
    ROOT/iter_0000020.tmp/    being written (or left by a crash): never loaded, removed later
    ROOT/latest               the name of the newest committed checkpoint (a hint; see below)

A checkpoint is written into `iter_N.tmp`, every file fsync'ed, `meta.json` (with the file
manifest) written last inside it, then the directory is renamed to `iter_N` (atomic on POSIX) and
the parent directory fsync'ed; only then is `latest` replaced (write aside, fsync, rename). A crash
at any moment therefore leaves either the old set of checkpoints or the old set plus the new one.
Discovery does not trust `latest` alone: the newest `iter_N` holding a complete meta.json wins, so
a crash between the rename and the marker update loses nothing. Old checkpoints are removed by
renaming them to `*.deleting` first, so a half-deleted directory is never taken for a checkpoint.

Since a save never leaves an `iter_N` without its meta.json, an `iter_N` that cannot be read is
damage, never skipped: `newest_checkpoint` (what `resume=auto` and a root path load) stops naming
it and the older complete one. `latest` may lag one checkpoint behind the scan (a kill between the
rename and the marker update); any other disagreement (a marker naming something newer than every
complete checkpoint, or no checkpoint at all) is an error too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zlib
from pathlib import Path

from megazoo.core.checkpoint.planner import CheckpointError
from megazoo.core.fs import fsync_path, inside, write_text_atomic

META = "meta.json"
LATEST = "latest"
FORMAT = "megazoo-checkpoint"
VERSION = 1
ITER = re.compile(r"^iter_(\d{7,})$")


def iter_name(step: int) -> str:
    return f"iter_{step:07d}"


def write_atomic(path: Path, text: str) -> None:
    """Replace `path` by `text` so that readers see either the old or the new content, durably."""
    write_text_atomic(path, text, fsync=True)


def write_json(path: Path, obj) -> None:
    write_atomic(path, json.dumps(obj, indent=1, sort_keys=True, allow_nan=True))


def crc32_file(path: Path, block: int = 1 << 22) -> int:
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(block):
            crc = zlib.crc32(chunk, crc)
    return crc


def manifest(ckpt: Path, meta: dict) -> dict:
    """meta.json's file manifest (name -> {"bytes", "crc32"}), every name confined to the checkpoint
    folder; checked before any file is opened (CheckpointError otherwise)."""
    files = meta.get("files")
    if not isinstance(files, dict):
        raise CheckpointError(f"{Path(ckpt) / META} has no file manifest: it is not a complete megazoo "
                              f"checkpoint record")
    for name, entry in files.items():
        if not inside(ckpt, name):
            raise CheckpointError(f"{Path(ckpt) / META} names the file {str(name)[:120]!r}, which is not a file "
                                  f"inside {ckpt}; refusing to open it (the checkpoint is damaged or crafted)")
        if not (isinstance(entry, dict) and all(isinstance(entry.get(k), int) for k in ("bytes", "crc32"))):
            raise CheckpointError(f"{Path(ckpt) / META}: the manifest entry of {name} lacks its size or checksum")
    return files


def read_meta(ckpt: Path) -> dict | None:
    """The parsed meta.json of a committed checkpoint, or None when absent or unreadable."""
    try:
        meta = json.loads((Path(ckpt) / META).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not meta.get("complete"):
        return None
    if not all(isinstance(meta.get(k), t) for k, t in _RECORD.items()):  # damaged or hand-edited
        return None
    return meta


# the fields of a complete meta.json that loading reads, and their types
_RECORD = {"step": int, "layout": dict, "meta": dict, "json": dict, "per_rank_json": list, "files": dict,
           "tensors": dict}


def list_checkpoints(root: Path) -> list[tuple[int, Path]]:
    """(step, path) of every committed checkpoint under `root`, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = []
    for p in root.iterdir():
        m = ITER.match(p.name)
        if m and p.is_dir() and read_meta(p) is not None:
            found.append((int(m.group(1)), p))
    return sorted(found)


def find_latest(root: Path) -> Path | None:
    """The newest complete checkpoint under `root` (None when there is none)."""
    found = list_checkpoints(root)
    return found[-1][1] if found else None


def iter_dirs(root: Path) -> list[tuple[int, Path]]:
    """(step, path) of every `iter_N` under `root`, complete or not, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted((int(m.group(1)), p) for p in root.iterdir() if (m := ITER.match(p.name)))


def newest_checkpoint(root: Path) -> Path | None:
    """The newest checkpoint under `root` (None when there is none), refusing to skip damage: the
    newest `iter_N` must be complete and `latest` must not name anything newer (CheckpointError
    naming the folder at fault, the older complete checkpoint and how to choose it)."""
    root = Path(root)
    if not root.is_dir():
        return None
    found = iter_dirs(root)
    complete = [(step, p) for step, p in found if p.is_dir() and read_meta(p) is not None]
    older = complete[-1][1] if complete else None
    choose = (f"resume from the older complete checkpoint by naming it (checkpoint.resume={older}), or "
              if older is not None else "there is no older complete checkpoint: ")
    if found and (older is None or found[-1][1] != older):
        bad = found[-1][1]
        raise CheckpointError(f"checkpoint {bad} is unreadable ({bad / META} is missing, truncated or not a "
                              f"complete megazoo checkpoint record); {choose}move {bad} aside after checking it")
    try:
        marker = (root / LATEST).read_text().strip()
    except FileNotFoundError:
        return older
    except (OSError, ValueError) as e:  # a folder, unreadable, not text
        raise CheckpointError(f"{root / LATEST} cannot be read ({e}); fix or delete the file") from None
    m = ITER.match(marker)
    if m is None:
        raise CheckpointError(f"{root / LATEST} holds {marker[:80]!r}, not a checkpoint name (iter_N); fix or "
                              f"delete the file")
    if older is None or int(m.group(1)) > complete[-1][0]:
        what = f"the newest complete checkpoint is {older}" if older is not None else "there is no complete checkpoint"
        raise CheckpointError(f"{root / LATEST} names {marker}, but {root / marker} is not a complete checkpoint "
                              f"and {what} (a checkpoint was removed or damaged); {choose}restore {root / marker}")
    return older


def stale_dirs(root: Path) -> list[Path]:
    """Directories left by an interrupted save or deletion."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("iter_")
                  and (p.name.endswith(".tmp") or p.name.endswith(".deleting")))


def remove_stale(root: Path, keep: Path | None = None) -> list[Path]:
    """Delete what interrupted saves left behind (except `keep`); return what was removed."""
    removed = []
    for p in stale_dirs(root):
        if keep is not None and p == Path(keep):
            continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


def _delete(path: Path) -> None:
    doomed = path.with_name(path.name + ".deleting")
    os.replace(path, doomed)
    fsync_path(path.parent)
    shutil.rmtree(doomed, ignore_errors=True)


def commit(tmp: Path, final: Path) -> None:
    """Make the fully written `tmp` directory visible as `final` (replacing an older `final`)."""
    fsync_path(tmp)
    if final.exists():  # the same step saved again (e.g. after a resume): retire the old one first
        _delete(final)
    os.replace(tmp, final)
    fsync_path(final.parent)


def update_latest(root: Path, final: Path) -> None:
    write_atomic(Path(root) / LATEST, final.name + "\n")


def prune(root: Path, keep: int | None) -> list[Path]:
    """Keep the newest `keep` committed checkpoints (None or <= 0: keep all); return removed ones."""
    if not keep or keep <= 0:
        return []
    found = list_checkpoints(root)
    doomed = [p for _, p in found[:-keep]]
    for p in doomed:
        _delete(p)
    return doomed


def resolve_resume(root: Path | str | None, resume: str | os.PathLike | None) -> Path | None:
    """The checkpoint to resume from: `auto` = newest complete one under `root` (None if none),
    `none`/None = start fresh, anything else a path (a checkpoint or a root of checkpoints)."""
    if resume is None or str(resume) == "none":
        return None
    if str(resume) == "auto":
        return newest_checkpoint(Path(root)) if root is not None else None
    path = Path(resume)
    if (path / META).exists():
        return path
    latest = newest_checkpoint(path)
    if latest is None:
        raise FileNotFoundError(f"checkpoint.resume={resume}: no complete checkpoint there (a directory "
                                f"iter_N with a meta.json, or a folder of them); use resume=auto or none")
    return latest
