"""Atomic file writes, the one helper for every writer in megazoo (checkpoints, data caches,
tokenizer files, model folders, task outputs): a reader sees the old content or the new one,
never a half-written file, and a failed write leaves no temporary file behind.

    write_text_atomic(path, text)                   # or write_bytes_atomic / write_json_atomic
    write_json_atomic(path, obj, fsync=True)        # durable across a power loss (checkpoints)
    with atomic_file(path) as f: np.save(f, array)  # any writer that takes a binary file
    with atomic_folder(out_dir) as tmp: ...         # a whole folder (model exports, tokenizers)
    widen_to_umask(folder)                          # what a private writer made, readable per the umask

The temporary file sits beside the target (os.replace is atomic only within one file system), has
a unique name ending in `.tmp` that carries the writer's pid (`NAME.mzPID-HEX.tmp`: concurrent
writers do not collide, checkpoint clean-up knows the suffix, and the next writer of the same target
removes what a killed one left) and the usual permissions (created like open() does, not 0600 as
mkstemp makes it). Scratch folders are `.NAME.tmp-PID-HEX` with a marker file inside, made like
mkdir does (the umask's permissions, not mkdtemp's 0700: outputs stay readable where the umask
allows); only folders that carry the marker and whose process is gone are ever removed by a later run.
With fsync=True the data is flushed to disk before the rename and the directory after it, so the
rename itself survives a crash.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
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


SCRATCH_MARKER = ".megazoo-scratch"  # inside every scratch folder megazoo makes: proof that it made it


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs on this machine (a scratch name's owner)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def sweep_stale(target: str | os.PathLike) -> None:
    """Remove what a killed writer of `target` left beside it: temporary files `NAME.mzPID-HEX.tmp`
    and marked scratch folders `.NAME.tmp-PID-*` of processes that are gone. A folder moved aside by
    an interrupted overwrite (`.NAME.old-PID-HEX`) is put back when the target is missing (the new
    one never arrived) and removed when the target is there (the new one is complete)."""
    target = Path(target)
    parent = target.parent
    if not parent.is_dir():
        return
    name = re.escape(target.name)
    tmp_file = re.compile(rf"{name}\.mz(\d+)-[0-9a-f]{{8}}\.tmp")
    tmp_dir = re.compile(rf"\.{name}\.tmp-(\d+)-[^/]+")
    old_dir = re.compile(rf"\.{name}\.old-(\d+)-[0-9a-f]{{8}}")
    try:
        siblings = list(parent.iterdir())
    except OSError:
        return
    for sib in siblings:
        if m := tmp_file.fullmatch(sib.name):
            if sib.is_file() and not sib.is_symlink() and not pid_alive(int(m.group(1))):
                sib.unlink(missing_ok=True)
        elif m := tmp_dir.fullmatch(sib.name):
            if (sib.is_dir() and not sib.is_symlink() and (sib / SCRATCH_MARKER).is_file()
                    and not pid_alive(int(m.group(1)))):
                shutil.rmtree(sib, ignore_errors=True)
        elif m := old_dir.fullmatch(sib.name):
            if sib.is_symlink() or pid_alive(int(m.group(1))):
                continue
            if not os.path.lexists(target):
                os.replace(sib, target)  # the interrupted overwrite's old content comes back
            elif sib.is_dir():
                shutil.rmtree(sib, ignore_errors=True)
            else:
                sib.unlink(missing_ok=True)


def scratch_folder(out: str | os.PathLike) -> Path:
    """A new, uniquely named, marked scratch folder beside `out` (created by this call).

    Made with a plain mkdir, so it has the permissions the user's umask gives any folder (0755 under
    umask 022), not mkdtemp's 0700: it becomes the output, which colleagues on a shared machine
    may need to read. The unique name (pid and random hex, created exclusively) keeps writers apart."""
    out = Path(out)
    for _ in range(100):
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            os.mkdir(tmp)  # mode 0o777 less the umask; fails if the name exists (never reused)
        except FileExistsError:
            continue
        (tmp / SCRATCH_MARKER).write_text(f"{os.getpid()}\n")
        return tmp
    raise FileExistsError(errno.EEXIST, "no free scratch folder name after 100 tries", str(out.parent))


def current_umask() -> int:
    """This process's umask, read without changing it where the system says it (Linux's
    /proc/self/status); elsewhere set and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def widen_to_umask(root: str | os.PathLike) -> None:
    """Give every folder and file under `root` (itself included) at least the permissions a plain
    mkdir/open would under the current umask. Libraries that write privately (safetensors makes its
    files 0600, mkdtemp 0700) would otherwise leave outputs colleagues cannot read; bits already set
    (an executable script) are kept, and nothing beyond what the umask allows is added."""
    mask = current_umask()
    for folder, dirs, names in os.walk(root):
        for path, full in [(folder, 0o777)] + [(os.path.join(folder, n), 0o666) for n in names]:
            if os.path.islink(path):
                continue
            mode = os.stat(path).st_mode & 0o7777
            want = mode | ((0o777 if mode & 0o111 else full) & ~mask)  # an executable as a linker makes it
            if want != mode:
                os.chmod(path, want)


@contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "wb", fsync: bool = False,
                encoding: str | None = None) -> Iterator[IO]:
    """Open a temporary sibling of `path` for writing; on success it replaces `path`."""
    path = Path(path)
    sweep_stale(path)
    tmp = path.with_name(f"{path.name}.mz{os.getpid()}-{secrets.token_hex(4)}.tmp")
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


@contextmanager
def atomic_folder(out: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Write into a temporary sibling folder and move it into place only when complete, so a
    failure leaves nothing half-written and an existing folder is replaced only on success (a
    non-empty one only with `overwrite`)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(errno.EEXIST, "is a file, not a folder; choose another folder", str(out))
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(errno.EEXIST, "exists and is not empty; choose another folder or pass --overwrite",
                              str(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale(out)
    tmp = scratch_folder(out)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    widen_to_umask(tmp)  # readable where the umask allows, as if each file had been made with open()
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}-{secrets.token_hex(4)}"
        os.replace(out, old)
    os.replace(tmp, out)
    (out / SCRATCH_MARKER).unlink(missing_ok=True)  # after the rename: a killed run's scratch stays marked
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@contextmanager
def resumable_folder(out: str | os.PathLike) -> Iterator[Path]:
    """A folder filled piece by piece so that a killed run can resume (curate's stage shards): `out`
    must be missing or empty, and is made when missing. An error (an Exception) removes everything
    written into it, and the folder itself when this call made it, since all of it is this run's; a
    kill (KeyboardInterrupt, a signal) keeps it for the rerun to resume."""
    out = Path(out)
    made = not os.path.lexists(out)
    if not made and any(out.iterdir()):
        raise FileExistsError(errno.EEXIST, "exists and is not empty; a resumable folder starts empty", str(out))
    out.mkdir(parents=True, exist_ok=True)
    try:
        yield out
    except Exception:
        if made:
            shutil.rmtree(out, ignore_errors=True)
        else:
            for child in out.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        raise
