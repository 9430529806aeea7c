"""Build an index from a vectors folder (vectors.py) without holding the vectors in memory.

    meta = build_from_vectors("VEC", "INDEX", "IVF4096,PQ64", store=store, index_shards=2)
    scores, rows = exact_topk(open_vectors("VEC"), queries, k=100)   # block by block, exact

The index is any faiss factory string (or an alias of index.factory_spec). One that needs training is
trained once on a sample of stored vectors (`train_sample`, default: default_train_sample), then
every shard index starts as a copy of that trained empty index and is filled block by block in row
order. With `index_shards` K > 1 the rows are cut into K contiguous ranges, one index file each,
written one after another, so only one shard is ever in memory; load_index joins them into one
faiss.IndexShards. Memory while building: the training sample while training, then one shard's index
plus one block of vectors (`block_rows` x dim x 4 bytes) and the probe queries' running top-k.
Measured (128-d float32, IVF1024,PQ16, 2 cores): peak RSS 139 MiB above the interpreter's at 250k and
at 1M vectors alike (122 and 488 MiB of vectors). faiss grows a Flat/IVF index's storage by doubling,
so while adding, the index itself can briefly take up to ~1.7x its final size (Flat at 1M: +823 MiB
for a 488 MiB index).

The same pass over the blocks also runs the exact search of the probe queries (stored vectors drawn
by Vectors.sample, or given ones) with a streaming top-k merge, and each shard's index is searched
for them before it is written: meta.json records recall@10 (and @100 when the collection has 100
rows) of the approximate index against exact search. The exact search costs queries x count x dim
multiply-adds (1000 probes over 21M 768-d vectors: ~16 TFLOP, tens of minutes on a CPU node);
`probes=0` (`--recall-queries 0`) skips it.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import numpy as np

from megazoo.core.verbosity import shows_progress
from megazoo.tasks.retrieval.index import (KINDS, factory_spec, make_index, on_device, recall_against_exact,
                                           row_ranges, set_search, shard_name, to_cpu, train, write_meta)

BLOCK_ROWS = 65536
RECALL_KS = (10, 100)
SETTINGS = ("checkpoint", "pooling", "passage_length", "similarity", "passages", "ranks", "embed_s")


def centroids(spec: str) -> int:
    """The most k-means centroids one training of `spec` fits: IVF cells, or 256 per (O)PQ codebook."""
    cells = [int(n) for n in re.findall(r"IVF(\d+)", spec)]
    books = [1 << int(b) if b else 256 for b in re.findall(r"PQ\d+(?:x(\d+))?", spec)]
    return max(cells + books + [1])


def default_train_sample(count: int, spec: str) -> int:
    """Training vectors when none are given: min(count, max(100_000, 40 x centroids)). faiss wants at
    least 39 points per centroid and its k-means samples at most 256 per centroid, so 40 per centroid
    is its floor and 100k the floor of any useful PQ/OPQ training."""
    return min(count, max(100_000, 40 * centroids(spec)))


def merge_topk(best: tuple[np.ndarray, np.ndarray] | None, scores: np.ndarray, rows: np.ndarray,
               k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (score, row) per query of `best` and a new candidate set, best first (ties: lower row)."""
    if best is not None:
        scores, rows = np.concatenate([best[0], scores], axis=1), np.concatenate([best[1], rows], axis=1)
    scores = np.where(rows < 0, -np.inf, scores)  # faiss pads a short result with row -1
    order = np.lexsort((rows, -scores), axis=-1)[:, :k]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)


def exact_block(best, queries: np.ndarray, start: int, block: np.ndarray, k: int):
    """Fold one block of stored vectors (rows start..) into the running exact top-k of `queries`.
    faiss.knn is exact brute force that tiles the product itself (a few MB whatever the block), where
    numpy would hold a [queries x block] score matrix and its argsort."""
    import faiss

    kk = min(k, len(block))
    scores, rows = faiss.knn(queries, block, kk, metric=faiss.METRIC_INNER_PRODUCT)
    return merge_topk(best, scores, np.where(rows >= 0, rows + start, -1), k)


def exact_topk(vec, queries: np.ndarray, k: int, block_rows: int = BLOCK_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """Exact (scores, rows) [q, min(k, count)] over a vectors folder, one block in memory at a time."""
    q = np.ascontiguousarray(queries, dtype=np.float32)
    best = None
    for start, block in vec.blocks(block_rows):
        best = exact_block(best, q, start, block, min(k, vec.count))
    return best


def blocks_between(vec, a: int, b: int, rows: int):
    """(start_row, float32 block) of rows a..b-1 of a vectors folder, reading only those rows."""
    for start, stop, path in vec.shards:
        lo, hi = max(a, start), min(b, stop)
        if lo >= hi:
            continue
        x = np.load(path, mmap_mode="r", allow_pickle=False)
        for s in range(lo, hi, rows):
            yield s, np.ascontiguousarray(x[s - start:min(hi, s + rows) - start], dtype=np.float32)
        del x


def _ids(store, ids, vec, tmp: Path, block_rows: int) -> None:
    """ids.npy (row -> passage id, int64), copied block-wise from the store's ids (or the given array)."""
    source = store.ids if store is not None else ids
    if len(source) != vec.count:
        what = f"the store {store.source}" if store is not None else "the ids given"
        raise ValueError(f"{vec.folder}: {vec.count} vectors but {what} has {len(source)} rows; pass the store the "
                         f"vectors were embedded from")
    out = np.lib.format.open_memmap(tmp / "ids.npy", mode="w+", dtype=np.int64, shape=(vec.count,))
    for a in range(0, vec.count, block_rows):
        out[a:a + block_rows] = np.asarray(source[a:a + block_rows], dtype=np.int64)
    out.flush()
    del out


def _probes(vec, queries, probes: int, seed: int) -> np.ndarray | None:
    if queries is not None:
        q = np.ascontiguousarray(queries, dtype=np.float32)
        if q.ndim != 2 or q.shape[1] != vec.dim:
            raise ValueError(f"recall queries of shape {q.shape}; expected [n, {vec.dim}]")
        return q[:probes] if probes else None
    return vec.sample(min(probes, vec.count), seed=seed + 1)[1] if probes and vec.count else None


def _trained(empty, vec, spec: str, train_sample: int | None, device: str, seed: int, progress: bool):
    """(the empty index trained on a sample, the sample's size); an index without training as it is."""
    if empty.is_trained:
        return empty, 0
    n = min(vec.count, train_sample or default_train_sample(vec.count, spec))
    cells = max([int(c) for c in re.findall(r"IVF(\d+)", spec)] + [0])
    if cells > n:  # faiss's k-means needs a point per cell: say so before any work
        raise ValueError(f"--index-factory {spec!r}: {cells} IVF cells but {n} training vectors (of {vec.count}); "
                         f"use fewer cells or a larger --train-sample")
    if progress:
        print(f"index: training {spec} on {n} of {vec.count} vectors", file=sys.stderr)
    index = on_device(empty, device)
    train(index, vec.sample(n, seed=seed)[1], spec, seed)
    return to_cpu(index), n


def build_from_vectors(vectors, out, factory: str = "flat", *, store=None, ids=None, nlist: int | None = None,
                       m: int = 32, train_sample: int | None = None, index_shards: int = 1, nprobe: int | None = 8,
                       ef_search: int | None = 128, device: str = "cpu", seed: int = 0, queries=None,
                       probes: int = 1000, block_rows: int = BLOCK_ROWS, progress: bool = True,
                       overwrite: bool = False) -> dict:
    """Build, measure and write the index of a vectors folder (a path or an open_vectors result) to
    `out` (replaced only with `overwrite`, only once complete); returns its meta. `store` (open_store's)
    gives ids.npy and must be the store the vectors were embedded from; `ids` (an array) instead."""
    import faiss
    from tqdm import tqdm

    from megazoo.core.fs import atomic_folder
    from megazoo.tasks.retrieval.vectors import open_vectors

    vec = open_vectors(vectors) if isinstance(vectors, (str, Path)) else vectors
    if store is not None and store.fingerprint != vec.store_fingerprint:
        raise ValueError(f"--store {store.source}: its fingerprint {store.fingerprint[:12]}... is not the one the "
                         f"vectors in {vec.folder} were embedded from ({vec.store_fingerprint[:12]}...); pass that "
                         f"store")
    if store is None and ids is None:
        raise ValueError(f"{vec.folder}: give the passage store the vectors were embedded from (--store), for the "
                         f"passage ids")
    if vec.count == 0:
        raise ValueError(f"{vec.folder}: holds no vectors; embed a non-empty store")
    spec = factory_spec(factory, vec.count, nlist, m)
    empty = make_index(spec, vec.dim)
    knobs = set_search(empty, nprobe, ef_search)
    t0 = time.perf_counter()
    empty, trained_on = _trained(empty, vec, spec, train_sample, device, seed, progress)
    train_s = time.perf_counter() - t0
    exact = spec == "Flat"
    q = None if exact else _probes(vec, queries, probes, seed)
    ks = [k for k in RECALL_KS if k <= vec.count] or [vec.count]
    kmax = max(ks)
    ranges = row_ranges(vec.count, min(index_shards, vec.count))  # no empty shard
    meta: dict = {"kind": factory if factory in KINDS else ("flat" if exact else spec), "factory": spec,
                  "metric": "inner_product", "store": vec.store_fingerprint,
                  "vectors": {"path": str(Path(vec.folder).resolve()), "digest": vec.digest, "dtype": vec.dtype},
                  **{k: vec.manifest[k] for k in SETTINGS if k in vec.manifest}, "similarity": vec.similarity,
                  "trained_on": trained_on, "search": knobs, "index_shards": len(ranges)}
    t0 = time.perf_counter()
    found = truth = None
    with atomic_folder(out, overwrite) as tmp:
        _ids(store, ids, vec, tmp, block_rows)
        shards = []
        with tqdm(total=vec.count, unit="vec", unit_scale=True, desc="index", disable=not shows_progress(progress),
                  mininterval=1.0) as bar:
            for k, (a, b) in enumerate(ranges):
                part = on_device(faiss.clone_index(empty), device)
                for start, block in blocks_between(vec, a, b, block_rows):
                    part.add(block)
                    if q is not None:
                        truth = exact_block(truth, q, start, block, kmax)
                    bar.update(len(block))
                if q is not None:  # this shard's answers, rows made global, merged as IndexShards does
                    s, r = part.search(q, min(kmax, b - a))
                    found = merge_topk(found, s, np.where(r >= 0, r + a, -1), kmax)
                name = "index.faiss" if len(ranges) == 1 else shard_name(k)
                faiss.write_index(to_cpu(part), str(tmp / name))
                shards.append({"file": name, "start": a, "stop": b})
                del part
        build_s = time.perf_counter() - t0
        meta.update(dim=vec.dim, count=vec.count, train_s=train_s, add_s=build_s, build_s=train_s + build_s,
                    add_per_s=vec.count / max(build_s, 1e-9),
                    index_bytes=sum((tmp / s["file"]).stat().st_size for s in shards))
        if len(ranges) > 1:
            meta["shards"] = shards
        if q is not None:
            meta["recall_queries"] = len(q)
            for k in ks:
                meta[f"recall_at_{k}"] = recall_against_exact(found[1][:, :k], truth[1][:, :k])
        write_meta(tmp, meta)
    return meta
