"""Save and load a whole training state, sharded, atomic and independent of the parallel layout.

    path = save_checkpoint(root, step, state, ctx, meta, keep=3)      # collective
    state, info = load_checkpoint(path_or_root, template, ctx, expect=meta)   # collective

`state` is a nested dict (see spec.py for its leaves). Tensors are written by
torch.distributed.checkpoint, each rank writing only the chunks it holds (replicas are written
once); plain values go to meta.json. Loading fills the template's tensors in place at the current
layout, whatever layout saved them, and returns a copy of the template with its plain values
replaced by the saved ones.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import math
import os
import shutil
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import FileSystemWriter
from torch.distributed.checkpoint.api import CheckpointException

from megazoo.core.checkpoint import storage as S
from megazoo.core.checkpoint.planner import (CheckpointError, ChunkLoadPlanner, ChunkSavePlanner,
                                             SafeFileSystemReader, checked_metadata, safe_load_metadata)
from megazoo.core.checkpoint.spec import SEP, Entry, Flat, Piece, flatten, rebuild
from megazoo.core.parallel.context import ParallelContext

# model-config fields that do not change the stored tensors or their meaning
NON_ARCH_FIELDS = frozenset({"dropout", "attention_dropout", "recompute", "init_std", "scaled_init",
                             "make_vocab_size_divisible_by"})


def layout_of(ctx: ParallelContext) -> dict:
    """The layout a checkpoint was saved at; cp and ep only when > 1, so that a checkpoint saved
    before they existed still counts as the same layout (and restores its per-rank state)."""
    layout = {"tp": ctx.tp, "pp": ctx.pp, "dp": ctx.dp, "vpp": ctx.vpp, "sp": bool(ctx.sp),
              "world_size": ctx.world_size}
    layout.update({k: getattr(ctx, k) for k in ("cp", "ep") if getattr(ctx, k) > 1})
    return layout


def architecture(arch: str, model_config: dict, **extra) -> dict:
    """The part of a run's metadata a checkpoint must match to be loaded (pass as `expect`)."""
    return {"arch": arch, "model": {k: v for k, v in model_config.items() if k not in NON_ARCH_FIELDS}, **extra}


def _rank_prefix(rank: int) -> str:
    return f"__rank{rank:05d}__{SEP}"


def _distributed(ctx: ParallelContext) -> bool:
    return ctx.world_size > 1 and dist.is_available() and dist.is_initialized()


def _all_gather(obj, ctx: ParallelContext, group=None) -> list:
    if not _distributed(ctx):
        return [obj]
    out = [None] * dist.get_world_size(group)
    dist.all_gather_object(out, obj, group=group)
    return out


def _raise_first(errors: list, cls=CheckpointError) -> None:
    errors = [e for e in errors if e]
    if errors:
        raise cls(errors[0])


@contextlib.contextmanager
def dcp_errors():
    """Quiet DCP's warning about running in one process (we ask for it) and turn its per-rank
    failure report into one CheckpointError."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="torch.distributed is disabled")
        try:
            yield
        except CheckpointException as e:
            raise _unwrap(e) from None


def _unwrap(e: CheckpointException) -> CheckpointError:
    """DCP reports per-rank failures with tracebacks; keep the first rank's message."""
    failures = getattr(e, "failures", {}) or {}
    for rank in sorted(failures):
        exc = failures[rank][0] if isinstance(failures[rank], tuple) else failures[rank]
        return CheckpointError(str(exc)) if not isinstance(exc, CheckpointError) else exc
    return CheckpointError(str(e))


# ---------------------------------------------------------------------------------------------
# save

def save_checkpoint(root: str | Path, step: int, state: dict[str, Any], ctx: ParallelContext,
                    meta: dict | None = None, keep: int | None = None, group=None) -> Path:
    """Write `state` as ROOT/iter_{step:07d}, atomically; keep the newest `keep` checkpoints.

    Collective over all ranks of `ctx` (`group`, if given, must hold them all). `meta` (JSON: arch, model config, vocab, step,
    consumed samples, ...) is stored in meta.json and checked against `expect` on load.
    Returns the checkpoint directory.
    """
    return _write(Path(root), step, flatten(state), ctx, meta or {}, keep, group)


def _write(root: Path, step: int, flat: Flat, ctx: ParallelContext, meta: dict, keep, group) -> Path:
    """Write and commit; on failure the half-written `iter_N.tmp` is removed (the previous
    checkpoints are untouched) and a full disk is reported as such."""
    try:
        return _write_files(root, step, flat, ctx, meta, keep, group)
    except Exception as e:
        final = root / S.iter_name(step)
        if ctx.rank == 0:
            shutil.rmtree(root / (final.name + ".tmp"), ignore_errors=True)
        if not _no_space(e):
            raise
        prev = S.find_latest(root)
        kept = f"the previous checkpoint {prev} is kept" if prev is not None else "there is no earlier checkpoint"
        raise CheckpointError(f"no space left on device while saving checkpoint {final} (it needs about "
                              f"{checkpoint_bytes(flat) / 2**20:.1f} MiB); {kept}. Free space there or set "
                              f"checkpoint.dir to another disk, then continue with checkpoint.resume=auto") from e


def checkpoint_bytes(state: dict | Flat) -> int:
    """About how many bytes a checkpoint of `state` (a state or a flattened one) takes: its
    tensors at their global shapes (every rank's RNG state counted as this rank's)."""
    flat = state if isinstance(state, Flat) else flatten(state)
    entries = list(flat.tensors.values()) + list(flat.rank_tensors.values())
    return sum(math.prod(e.global_shape) * torch.empty((), dtype=e.dtype).element_size() for e in entries)


def _no_space(e: BaseException | None) -> bool:
    """A full disk somewhere in the error (its chain, DCP's per-rank failures, a gathered message)."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno == errno.ENOSPC or os.strerror(errno.ENOSPC) in str(e):
            return True
        failures = getattr(e, "failures", None) or {}
        if any(_no_space(f[0] if isinstance(f, tuple) else f) for f in failures.values()):
            return True
        e = e.__cause__ or e.__context__
    return False


def _write_files(root: Path, step: int, flat: Flat, ctx: ParallelContext, meta: dict, keep, group) -> Path:
    distributed = _distributed(ctx)
    final = root / S.iter_name(step)
    tmp = root / (final.name + ".tmp")
    err = None
    if ctx.rank == 0:
        try:
            root.mkdir(parents=True, exist_ok=True)
            S.remove_stale(root)  # an earlier crash's leftovers
            tmp.mkdir()
        except OSError as e:
            err = f"cannot create checkpoint directory {tmp}: {e}"
    _raise_first(_all_gather(err, ctx, group))
    entries = dict(flat.tensors)
    entries.update({_rank_prefix(ctx.rank) + k: e for k, e in flat.rank_tensors.items()})
    writer = FileSystemWriter(tmp, single_file_per_rank=True, sync_files=True, thread_count=1)
    with dcp_errors():
        dcp.save(entries, storage_writer=writer, planner=ChunkSavePlanner(entries),
                 process_group=group, no_dist=not distributed)
    files = {p.name: {"bytes": p.stat().st_size, "crc32": S.crc32_file(p)}
             for p in sorted(tmp.glob(f"__{ctx.rank}_*.distcp"))}
    gathered = _all_gather((files, flat.rank_json), ctx, group)
    if ctx.rank == 0:
        try:
            _commit(root, tmp, final, step, flat, ctx, meta, keep, gathered)
        except Exception as e:  # report on every rank rather than leave the others waiting
            err = f"cannot commit checkpoint {final}: {type(e).__name__}: {e}"
    _raise_first(_all_gather(err, ctx, group))
    return final


def _commit(root, tmp, final, step, flat, ctx, meta, keep, gathered) -> None:
    files = {}
    for rank_files, _ in gathered:
        files.update(rank_files)
    md_path = tmp / ".metadata"
    files[md_path.name] = {"bytes": md_path.stat().st_size, "crc32": S.crc32_file(md_path)}
    md = safe_load_metadata(md_path)
    tensors = {k: {"shape": list(v.size), "dtype": str(v.properties.dtype).removeprefix("torch.")}
               for k, v in md.state_dict_metadata.items()}
    record = {"format": S.FORMAT, "version": S.VERSION, "complete": True, "step": step,
              "torch": torch.__version__, "layout": layout_of(ctx), "meta": meta, "json": flat.json,
              "per_rank_json": [rj for _, rj in gathered], "files": files, "tensors": tensors}
    S.write_json(tmp / S.META, record)  # last file in: its presence marks the data complete
    S.commit(tmp, final)
    S.update_latest(root, final)
    S.prune(root, keep)


class AsyncCheckpointer:
    """Saves in a background thread so training continues while files are written.

    `save` copies the state to CPU memory (the only time training waits), then writes and commits
    in the background over a gloo group of its own, so its collectives never interleave with the
    training's. Construct it on every rank (it creates a process group); call `wait()` before
    exiting (or before reading the checkpoint); `save` itself waits for the previous save.
    """

    def __init__(self, ctx: ParallelContext):
        self.ctx = ctx
        self.group = dist.new_group(backend="gloo") if _distributed(ctx) else None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="megazoo-ckpt")
        self._future: Future | None = None

    def save(self, root: str | Path, step: int, state: dict[str, Any], meta: dict | None = None,
             keep: int | None = None) -> None:
        self.wait()
        flat = flatten(state)
        staged = Flat({k: _stage(e) for k, e in flat.tensors.items()},
                      {k: _stage(e) for k, e in flat.rank_tensors.items()},
                      copy.deepcopy(flat.json), copy.deepcopy(flat.rank_json))
        self._future = self._pool.submit(_write, Path(root), step, staged, self.ctx, copy.deepcopy(meta or {}),
                                         keep, self.group)

    def wait(self) -> Path | None:
        """Block until the pending save is committed; return its path (re-raises its error)."""
        future, self._future = self._future, None
        return future.result() if future is not None else None

    def close(self) -> Path | None:
        try:
            return self.wait()
        finally:
            self._pool.shutdown()


def _stage(e: Entry) -> Entry:
    return Entry(e.key, e.global_shape, e.dtype,
                 [Piece(p.offsets, p.sizes, p.view.detach().to("cpu", copy=True)) for p in e.pieces])


# ---------------------------------------------------------------------------------------------
# load

def open_checkpoint(path: str | Path) -> tuple[Path, dict]:
    """Resolve a checkpoint directory (or a root of them: its newest complete one); read meta.json."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint {path} does not exist")
    if not (path / S.META).exists() and not path.name.endswith(".tmp") and not S.ITER.match(path.name):
        latest = S.newest_checkpoint(path)
        if latest is None:
            raise CheckpointError(f"{path} holds no complete checkpoint (no iter_N directory with a meta.json)")
        path = latest
    if path.name.endswith(".tmp"):
        raise CheckpointError(f"{path} is an unfinished save (crashed or in progress); load a complete iter_N")
    meta = S.read_meta(path)
    if meta is None:
        raise CheckpointError(f"{path / S.META} is missing, truncated or not a complete megazoo checkpoint record; "
                              f"load another checkpoint of the run (its folder lists them)")
    if meta.get("version", 0) > S.VERSION:
        raise CheckpointError(f"{path} has checkpoint format version {meta['version']}; this megazoo reads "
                              f"up to {S.VERSION}: upgrade megazoo")
    return path, meta


def check_meta(saved: dict, expect: dict, where: Path) -> None:
    """Raise one error listing every value of `expect` that differs from the checkpoint's metadata."""
    diffs = _meta_diffs(saved, expect, "")
    if diffs:
        names = ", ".join(name for name, _ in diffs[:3])
        raise CheckpointError(f"checkpoint {where} was saved for another model: {'; '.join(d for _, d in diffs)}. "
                              f"Load a checkpoint of this model, or set {names} to match")


def _meta_diffs(saved: dict, expect: dict, prefix: str) -> list[tuple[str, str]]:
    out = []
    for k, want in expect.items():
        name = prefix + k
        if k not in saved:
            if want is None:  # a setting added since the checkpoint was made, left at its default (off)
                continue
            out.append((name, f"{name} is not recorded (this run has {want!r})"))
        elif isinstance(want, dict) and isinstance(saved[k], dict):
            out += _meta_diffs(saved[k], want, name + ".")
        elif _jsonable(saved[k]) != _jsonable(want):
            out.append((name, f"{name}={saved[k]!r} there, {name}={want!r} in this run"))
    return out


def _jsonable(v):
    return [_jsonable(x) for x in v] if isinstance(v, (list, tuple)) else v


def verify_files(path: Path, meta: dict, ctx: ParallelContext, checksums: bool = True, group=None) -> None:
    """Every file of the manifest a plain name inside the checkpoint folder (checked before any
    is opened), present with its size; checksums spread over the ranks."""
    names = sorted(S.manifest(path, meta))
    for name in names:
        p, want = path / name, meta["files"][name]["bytes"]
        if not p.exists():
            raise CheckpointError(f"checkpoint {path}: shard file {name} is missing")
        if p.stat().st_size != want:
            raise CheckpointError(f"checkpoint {path}: file {name} has {p.stat().st_size} bytes, "
                                  f"expected {want} (truncated or corrupted)")
    err = None
    if checksums:
        for name in names[ctx.rank::max(1, ctx.world_size)] if _distributed(ctx) else names:
            if S.crc32_file(path / name) != meta["files"][name]["crc32"]:
                err = err or f"checkpoint {path}: file {name} is corrupted (crc32 checksum mismatch)"
    _raise_first(_all_gather(err, ctx, group))
    checked_metadata(path, set(names))  # the data files DCP will open: inside the folder, checksummed


def load_checkpoint(path: str | Path, state: dict[str, Any], ctx: ParallelContext, expect: dict | None = None,
                    strict: bool = True, verify: bool = True, group=None) -> tuple[dict, dict]:
    """Fill `state`'s tensors in place from a checkpoint saved at any layout. Collective.

    `path` is a checkpoint or a root (its newest complete checkpoint). `expect` is compared with
    the saved `meta` (e.g. `architecture(...)`). With `strict`, every template entry must be in
    the checkpoint, and every checkpoint tensor under a top-level key the template has must be
    used by some rank. PerRank entries are restored only when the layout is unchanged.
    Returns (state with plain values loaded, info: path, step, meta, layout, per_rank_restored).
    """
    path, meta = open_checkpoint(path)
    if expect:
        check_meta(meta["meta"], expect, path)
    verify_files(path, meta, ctx, verify, group)
    flat = flatten(state)
    stored = meta["tensors"]
    for key, e in flat.tensors.items():
        if key not in stored:
            if math.prod(e.global_shape) == 0:
                continue
            raise CheckpointError(f"checkpoint {path} has no tensor {key!r}")
        if tuple(stored[key]["shape"]) != e.global_shape:
            raise CheckpointError(f"tensor {key!r}: checkpoint {path} holds shape {stored[key]['shape']}, "
                                  f"this run expects {list(e.global_shape)} (another model size or vocabulary?)")
    missing = [k for k in flat.json if k not in meta["json"]]
    if strict and missing:
        raise CheckpointError(f"checkpoint {path} has no value {missing[0]!r}")
    if strict:
        _check_unused(path, stored, flat, ctx, group)
    same = meta["layout"] == layout_of(ctx)
    entries = {k: e for k, e in flat.tensors.items() if k in stored}
    if same:
        entries.update({_rank_prefix(ctx.rank) + k: e for k, e in flat.rank_tensors.items()})
    with dcp_errors():
        dcp.load(entries, storage_reader=SafeFileSystemReader(path, S.manifest(path, meta)),
                 planner=ChunkLoadPlanner(entries), process_group=group, no_dist=not _distributed(ctx))
    values = dict(meta["json"])
    if same:
        values.update(meta["per_rank_json"][ctx.rank])
    info = {"path": str(path), "step": meta["step"], "meta": meta["meta"], "layout": meta["layout"],
            "per_rank_restored": same}
    return rebuild(state, values), info


def _check_unused(path: Path, stored: dict, flat: Flat, ctx: ParallelContext, group) -> None:
    """Checkpoint tensors that no rank asks for, under top-level keys the template has, mean the
    checkpoint is of another model (more layers, another head, ...)."""
    asked = set()
    for keys in _all_gather(sorted(flat.tensors), ctx, group):
        asked.update(keys)
    tops = {k.split(SEP, 1)[0] for k in asked}
    unused = sorted(k for k in stored if k.split(SEP, 1)[0] in tops and k not in asked)
    if unused:
        raise CheckpointError(f"checkpoint {path} holds tensor {unused[0]!r} that this run does not have"
                              f"{f' (and {len(unused) - 1} more)' if len(unused) > 1 else ''}: it was saved "
                              f"for another model; load with strict=False to ignore")
