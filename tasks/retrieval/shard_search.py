"""Search an index whose shards are held by different ranks (faiss IndexShards across machines).

An index folder written with `megazoo task retrieval index --index-shards S` holds index-00000.faiss,
... over the row ranges of meta.json["shards"]. Here each rank of a process group loads only ITS
shard files (shard s when s % world == rank, unless `shards` names them), so a machine needs only
meta.json, ids.npy and its own shards; every rank searches the same queries in its shards, and one all_gather
of the ranks' (scores, global rows) merged by index_build.merge_topk gives every rank the global
top-k: the rows and scores load_index(folder) (one in-process IndexShards) gives.

    # on every rank of a torchrun job (torch.distributed initialised), the same queries everywhere
    scores, rows = search_shards("wiki/ivfpq", queries, k=100, store=store)
    passage_ids = ids_of("wiki/ivfpq", rows)

Bad input is one line on every rank (no rank is left waiting): a shard the folder lacks, a shard
file missing on this machine, an index folder of another store than `store`, or ranks whose folders
hold different indexes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from megazoo.tasks.retrieval.index import (IndexFolderError, check_folder, on_device, read_shard, set_search,
                                           shard_list)
from megazoo.tasks.retrieval.index_build import merge_topk


def _place(group) -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(group), dist.get_world_size(group)
    return 0, 1


def _gather(obj, group, world: int) -> list:
    if world == 1:
        return [obj]
    import torch.distributed as dist

    out = [None] * world
    dist.all_gather_object(out, obj, group=group)
    return out


def load_shards(folder, shards: list[int] | None = None, rank: int = 0, world: int = 1,
                expect_dim: int | None = None, expect_similarity: str | None = None, store=None,
                device: str = "cpu") -> tuple[dict, list[int], list[tuple[int, object]]]:
    """(meta, shard numbers, [(first row, faiss index)]) of the named shards of an index folder
    (default: s % world == rank), after the folder checks load_index makes (index.check_folder); the
    search knobs of meta.json set again."""
    folder = Path(folder)
    if not (folder / "meta.json").is_file():
        raise IndexFolderError(f"{folder}: not a retrieval index (no meta.json); build one with `megazoo task "
                               f"retrieval index --vectors VEC --out {folder} --index-shards S`")
    ids, meta = check_folder(folder, expect_dim, None, expect_similarity, None, store)
    have = shard_list(folder, meta, len(ids))
    if have[-1]["stop"] != len(ids):
        raise IndexFolderError(f"{folder}: its shards cover rows 0..{have[-1]['stop']} but ids.npy has {len(ids)} "
                               f"ids; the folder is damaged: rebuild the index")
    knobs = meta.get("search") if isinstance(meta.get("search"), dict) else {}
    shards = list(range(rank, len(have), world)) if shards is None else list(shards)
    out = []
    for k in shards:
        if not 0 <= k < len(have):
            raise IndexFolderError(f"{folder}: shard {k} asked for, but the index has {len(have)} shard(s) "
                                   f"(0..{len(have) - 1}); ask for those, or build it with --index-shards "
                                   f"{k + 1} or more")
        path = folder / str(have[k]["file"])
        if not path.is_file():
            raise IndexFolderError(f"{path}: missing, and this rank searches shard {k} (rows {have[k]['start']}.."
                                   f"{have[k]['stop']}); copy that file of the index to this machine")
        part = read_shard(folder, have[k])
        set_search(part, knobs.get("nprobe"), knobs.get("efSearch"))
        out.append((int(have[k]["start"]), on_device(part, device)))
    return meta, shards, out


def search_shards(folder, queries: np.ndarray, k: int, group=None, shards: list[int] | None = None,
                  expect_dim: int | None = None, expect_similarity: str | None = None, store=None,
                  device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """(scores, rows) [q, min(k, count)] of the global top-k over every rank's shards; rows are global
    (rows of ids.npy). Every rank of `group` (None: the world; no process group: this process alone,
    every shard) calls it with the same queries; `shards`: this rank's shard numbers (default: shard
    s when s % world == rank). A collective: an error on one rank is raised, as one line, on every rank."""
    rank, world = _place(group)
    q = np.ascontiguousarray(queries, dtype=np.float32)
    error, best, meta = None, None, {}
    try:
        meta, shards, parts = load_shards(folder, shards, rank, world, expect_dim, expect_similarity, store, device)
        for start, part in parts:
            s, r = part.search(q, min(k, part.ntotal))
            best = merge_topk(best, s, np.where(r >= 0, r + start, -1), k)
    except (ValueError, OSError) as e:  # IndexFolderError, an unreadable ids.npy: every rank raises it below
        error = " ".join(str(e).split())
    vectors = meta.get("vectors") if isinstance(meta.get("vectors"), dict) else {}
    same = {**{key: meta.get(key) for key in ("store", "count", "dim", "factory", "shards")},
            "vectors": vectors.get("digest")}
    told = _gather((error, same, shards), group, world)
    errors = [e for e, _, _ in told if e]
    if errors:
        raise IndexFolderError(errors[0])
    for r, (_, theirs, _) in enumerate(told):
        if theirs != told[0][1]:
            what = next(key for key in same if theirs.get(key) != told[0][1].get(key))
            raise IndexFolderError(f"{folder}: rank {r}'s index folder differs from rank 0's ({what}: "
                                   f"{str(theirs.get(what))[:60]} against {str(told[0][1].get(what))[:60]}); "
                                   f"every rank needs a copy of the same index (built from the same store)")
    held = sorted(n for _, _, mine in told for n in mine)
    total = len(meta.get("shards") or [None])
    if held != list(range(total)):
        raise IndexFolderError(f"{folder}: the ranks hold shards {held}, not each of 0..{total - 1} once; give "
                               f"every shard to one rank")
    width = min(k, int(meta.get("count", k)))
    if best is None:  # a rank without a shard
        best = (np.full((len(q), width), -np.inf, np.float32), np.full((len(q), width), -1, np.int64))
    if world == 1:
        return best
    merged = None
    for s, r in _gather(best, group, world):
        merged = merge_topk(merged, s, r, width)
    return merged


def ids_of(folder, rows: np.ndarray) -> np.ndarray:
    """Passage ids of global index rows (-1 stays -1), from the folder's ids.npy (memory-mapped)."""
    ids = np.load(Path(folder) / "ids.npy", mmap_mode="r", allow_pickle=False)
    rows = np.asarray(rows, dtype=np.int64)
    return np.where(rows >= 0, np.asarray(ids)[np.clip(rows, 0, None)], -1)
