"""Embedding a passage store in shards across ranks: each rank embeds the shards k with k % world ==
rank and writes each one complete (vectors.py's layout), so a killed job resumes at its first
unfinished shard and any number of ranks, on one machine (`--nproc N`) or several (torchrun, the
folder on a shared file system), fill one folder.

    manifest = embed_store("runs/store", "ckpt", "runs/vectors", nproc=2, shard_size=100_000)

Memory per rank: the encoder, one shard of vectors (shard_size x dim) and one chunk of passages
(CHUNK rows, read from the store by pread); the store itself stays on disk.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from megazoo.core.verbosity import shows_progress
from megazoo.tasks.retrieval.vectors import (VectorsError, check_shard, new_manifest, read_manifest, write_shard)

CHUNK = 4096  # passages read and tokenised at once
SETTINGS = ("store", "count", "dim", "dtype", "shard_size", "checkpoint", "pooling", "passage_length", "similarity")


def _encoder(checkpoint, pooling, batch: int, passage_length, similarity):
    from megazoo.tasks.retrieval.encoder import BiEncoder

    return BiEncoder(checkpoint, pooling, None, passage_length, batch, similarity=similarity)


def plan(store_path, checkpoint, out, shard_size: int = 100_000, dtype: str = "float32", pooling=None,
         passage_length=None, similarity=None, batch: int = 32, overwrite: bool = False) -> dict:
    """The manifest for this job: a new one (written to `out`), or the folder's own when it holds an
    unfinished (or finished) embedding with the same settings; refuses another embedding's folder."""
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.retrieval.store import open_store

    store = open_store(store_path)
    if not Path(checkpoint).is_dir():
        raise FileNotFoundError(f"--checkpoint {checkpoint}: no such folder (a retrieval run's checkpoints/, an "
                                f"import-hf folder or an HF BERT folder)")
    enc = _encoder(checkpoint, pooling, batch, passage_length, similarity)
    want = new_manifest(len(store), enc.hidden_size, shard_size, dtype, store.fingerprint,
                        store_path=str(store_path), checkpoint=str(checkpoint), pooling=enc.pooling,
                        passage_length=enc.passage_length, similarity=enc.similarity)
    del enc
    out = Path(out)
    if out.is_dir() and (out / "manifest.json").exists():
        have = read_manifest(out)
        differ = [k for k in SETTINGS if have.get(k) != want.get(k)]
        if not differ:
            return have
        if not overwrite:
            k = differ[0]
            raise VectorsError(f"{out}: holds the vectors of another embedding ({k} {have.get(k)!r}, this job's "
                               f"{want.get(k)!r}); choose another --out, or pass --overwrite to embed afresh")
        for f in [out / "manifest.json", *out.glob("shard-*.npy")]:  # only the files an embedding writes
            f.unlink()
    elif out.is_dir() and any(out.iterdir()):
        raise VectorsError(f"{out}: not empty and not a vectors folder (no manifest.json); choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "manifest.json", want)
    return want


def embed_rank(out, manifest: dict, batch: int = 32, progress: bool = True) -> dict:
    """Embed this rank's unfinished shards (run on every rank; world from torch.distributed)."""
    import torch.distributed as dist
    from tqdm import tqdm

    from megazoo.tasks.retrieval.store import open_store

    rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    out = Path(out)
    mine = [s for k, s in enumerate(manifest["shards"]) if k % world == rank]
    todo = [s for s in mine if not check_shard(out, manifest, s)]
    t0, done = time.perf_counter(), 0
    if todo:
        store = open_store(manifest["store_path"])
        if store.fingerprint != manifest["store"]:
            raise VectorsError(f"{manifest['store_path']}: not the store these vectors were planned from (its "
                               f"fingerprint changed); embed into a new folder")
        enc = _encoder(manifest["checkpoint"], manifest["pooling"], batch, manifest["passage_length"],
                       manifest["similarity"])
        bar = tqdm(total=sum(s["stop"] - s["start"] for s in todo), unit="passage", unit_scale=True,
                   desc=f"embed rank 0 of {world}", disable=not (shows_progress(progress) and rank == 0), mininterval=2.0)
        for s in todo:
            x = np.empty((s["stop"] - s["start"], manifest["dim"]), dtype=manifest["dtype"])
            for a in range(s["start"], s["stop"], CHUNK):
                ps = store.rows(a, min(s["stop"], a + CHUNK))
                x[a - s["start"]:a - s["start"] + len(ps)] = enc.passages([p.title for p in ps], [p.text for p in ps])
                bar.update(len(ps))
                done += len(ps)
            write_shard(out / s["file"], x)
        bar.close()
    import resource

    return {"rank": rank, "shards": len(todo), "reused": len(mine) - len(todo), "passages": done,
            "seconds": time.perf_counter() - t0,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def finish(out, manifest: dict) -> dict:
    """Check every shard and mark the manifest complete (rank 0, after all ranks are done)."""
    from megazoo.core.fs import write_json_atomic

    out = Path(out)
    missing = [s["file"] for s in manifest["shards"] if not check_shard(out, manifest, s)]
    if missing:
        raise VectorsError(f"{out}: {len(missing)} shards still missing ({missing[0]}...) after every rank finished; "
                           f"rerun the command to embed them")
    manifest = {**manifest, "complete": True}
    write_json_atomic(out / "manifest.json", manifest)
    return manifest


def embed_store(store_path, checkpoint, out, nproc: int = 1, shard_size: int = 100_000, dtype: str = "float32",
                pooling=None, passage_length=None, similarity=None, batch: int = 32, progress: bool = True,
                overwrite: bool = False) -> tuple[dict, list[dict]]:
    """(manifest, per-rank reports): plan, embed on `nproc` local ranks (or in this process), finish."""
    manifest = plan(store_path, checkpoint, out, shard_size, dtype, pooling, passage_length, similarity, batch,
                    overwrite)
    if nproc > 1:
        from megazoo.core.parallel.launch import spawn

        reports = spawn(embed_rank, nproc, str(out), manifest, batch, progress, timeout=30 * 24 * 3600.0)
    else:
        reports = [embed_rank(out, manifest, batch, progress)]
    return finish(out, manifest), reports

