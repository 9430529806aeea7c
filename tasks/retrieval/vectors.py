"""Passage vectors on disk in shards: what `megazoo task retrieval embed` writes (embed.py) and the
index builder reads, block by block, without holding the collection's vectors in memory.

    VEC/manifest.json        the plan and the settings: store fingerprint, checkpoint, pooling, passage
                             length, similarity, dtype, dim, count, shard_size and the shard list
    VEC/shard-00000.npy      rows [0, shard_size) of the store, [rows, dim] float16 or float32
    VEC/shard-00001.npy      ...

A shard file appears only complete (written to a temporary name and renamed), so a killed job leaves
the finished shards and nothing half-written; the rerun embeds only the missing ones. The manifest
says `"complete": true` once every shard is there.

    vec = open_vectors("VEC")           # VectorsError (one line) when damaged or incomplete
    for start, block in vec.blocks():   # float32 [n, dim], in row order, one shard at a time at most
        ...
    rows, x = vec.sample(10_000)        # a training sample for an approximate index
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FORMAT = "megazoo-passage-vectors"
DTYPES = ("float32", "float16")


class VectorsError(ValueError):
    """A vectors folder that cannot serve (missing, incomplete, a shard that disagrees with its manifest)."""


def shard_name(k: int) -> str:
    return f"shard-{k:05d}.npy"


def plan_shards(count: int, shard_size: int) -> list[dict]:
    """The shard list of a manifest: contiguous row ranges of `shard_size` rows (the last may be short)."""
    return [{"file": shard_name(k), "start": a, "stop": min(count, a + shard_size)}
            for k, a in enumerate(range(0, count, shard_size))]


def read_json_object(path: Path, what: str, fix: str, error: type[ValueError]) -> dict:
    """The JSON object in `path` (a folder's own meta file); anything else is error(`path: not the JSON
    object WHAT holds (...); FIX`). Shared by the store, vectors and index folders."""
    try:
        obj = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise error(f"{path}: not the JSON {what} holds ({type(e).__name__}); {fix}") from None
    if not isinstance(obj, dict):
        raise error(f"{path}: not the JSON object {what} holds; {fix}")
    return obj


def read_manifest(folder) -> dict:
    """The manifest of a vectors folder, checked for its own shape (not yet against the shard files)."""
    folder = Path(folder)
    path = folder / "manifest.json"
    if not path.is_file():
        raise VectorsError(f"{folder}: not a vectors folder (no manifest.json); write one with `megazoo task retrieval "
                           f"embed --store STORE --checkpoint CKPT --out {folder}`")
    m = read_json_object(path, "a vectors folder", "embed again into a new folder", VectorsError)
    keys = ("format", "count", "dim", "dtype", "shard_size", "shards", "store")
    if m.get("format") != FORMAT or any(k not in m for k in keys):
        raise VectorsError(f"{path}: not a {FORMAT} manifest (needs {', '.join(keys)}); embed again into a new folder")
    if m["dtype"] not in DTYPES:
        raise VectorsError(f"{path}: dtype {m['dtype']!r}; expected one of {', '.join(DTYPES)}")
    if m["shards"] != plan_shards(m["count"], m["shard_size"]):
        raise VectorsError(f"{path}: its shard list does not cover rows 0..{m['count']} in shards of "
                           f"{m['shard_size']}; the manifest was edited or damaged: embed again into a new folder")
    return m


def shard_header(path: Path) -> tuple[tuple, np.dtype] | None:
    """(shape, dtype) from a .npy header, or None when the file is not a readable .npy."""
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(f)
        return shape, dtype
    except (ValueError, OSError, EOFError):
        return None


def check_shard(folder: Path, manifest: dict, shard: dict) -> bool:
    """True when the shard's file exists and matches the manifest; False when it is missing; a
    VectorsError when it exists but disagrees (rows, dim or dtype)."""
    path = folder / shard["file"]
    if not path.exists():
        return False
    head = shard_header(path)
    want = ((shard["stop"] - shard["start"], manifest["dim"]), np.dtype(manifest["dtype"]))
    if head is None or head[0] != want[0] or head[1] != want[1]:
        got = "not a readable .npy file" if head is None else f"{head[0]} {head[1]}"
        raise VectorsError(f"{path}: holds {got}, but its manifest says {want[0]} {want[1]} (rows {shard['start']}.."
                           f"{shard['stop']}); the shard does not match its manifest: delete the shard to embed it "
                           f"again, or embed into a new folder")
    return True


def manifest_digest(manifest: dict) -> str:
    """A short digest of what the vectors are (settings and plan, not the finished flag)."""
    m = {k: v for k, v in manifest.items() if k != "complete"}
    return hashlib.blake2b(json.dumps(m, sort_keys=True).encode(), digest_size=12).hexdigest()


@dataclass
class Vectors:
    """A complete vectors folder, read shard by shard through memory maps."""

    folder: Path
    manifest: dict

    @property
    def dim(self) -> int:
        return int(self.manifest["dim"])

    @property
    def count(self) -> int:
        return int(self.manifest["count"])

    @property
    def dtype(self) -> str:
        return self.manifest["dtype"]

    @property
    def store_fingerprint(self) -> str:
        return self.manifest["store"]

    @property
    def similarity(self) -> str:
        return self.manifest.get("similarity", "dot")

    @property
    def digest(self) -> str:
        return manifest_digest(self.manifest)

    @property
    def shards(self) -> list[tuple[int, int, Path]]:
        return [(s["start"], s["stop"], self.folder / s["file"]) for s in self.manifest["shards"]]

    def _shard(self, path: Path) -> np.ndarray:
        return np.load(path, mmap_mode="r", allow_pickle=False)

    def blocks(self, rows: int = 65536):
        """(start_row, float32 [n, dim]) blocks in row order; at most `rows` rows held at once."""
        for start, stop, path in self.shards:
            x = self._shard(path)
            for a in range(0, stop - start, rows):
                yield start + a, np.ascontiguousarray(x[a:a + rows], dtype=np.float32)
            del x

    def take(self, rows) -> np.ndarray:
        """float32 [len(rows), dim] of the given rows (any order)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        if len(rows) and (rows.min() < 0 or rows.max() >= self.count):
            raise IndexError(f"rows outside 0..{self.count - 1}")
        size = int(self.manifest["shard_size"])
        for k, (start, _, path) in enumerate(self.shards):
            mine = np.flatnonzero(rows // size == k)
            if len(mine):
                out[mine] = self._shard(path)[rows[mine] - start]
        return out

    def sample(self, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(rows, vectors): min(n, count) distinct rows drawn uniformly (sorted), with their vectors."""
        n = min(n, self.count)
        rows = np.sort(np.random.default_rng(seed).choice(self.count, size=n, replace=False))
        return rows, self.take(rows)

    def all(self) -> np.ndarray:
        """Every vector as float32 [count, dim] (small collections: the in-process reader stages)."""
        return np.concatenate([b for _, b in self.blocks()]) if self.count else np.zeros((0, self.dim), np.float32)


def open_vectors(folder) -> Vectors:
    """A complete vectors folder, every shard checked against the manifest (headers only)."""
    folder = Path(folder)
    m = read_manifest(folder)
    missing = [s["file"] for s in m["shards"] if not check_shard(folder, m, s)]
    if missing or not m.get("complete"):
        what = f"{len(missing)} of {len(m['shards'])} shards are missing ({missing[0]}...)" if missing else \
            "the manifest is not marked complete"
        raise VectorsError(f"{folder}: an unfinished embedding: {what}; rerun the same `megazoo task retrieval "
                           f"embed` command to finish it")
    return Vectors(folder, m)


def write_shard(path: Path, x: np.ndarray) -> None:
    """One shard, written under a temporary name and renamed: it exists only complete."""
    from megazoo.core.fs import atomic_file

    with atomic_file(path, "wb") as f:
        np.save(f, x, allow_pickle=False)


def new_manifest(count: int, dim: int, shard_size: int, dtype: str, store: str, **settings) -> dict:
    if dtype not in DTYPES:
        raise VectorsError(f"--dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    return {"format": FORMAT, "version": 1, "count": int(count), "dim": int(dim), "dtype": dtype,
            "shard_size": int(shard_size), "store": store, **settings,
            "shards": plan_shards(int(count), int(shard_size)), "complete": False}


def save_vectors(folder, x: np.ndarray, shard_size: int, store_fingerprint: str = "test", dtype: str = "float32",
                 overwrite: bool = False, **settings) -> Vectors:
    """A complete vectors folder from an in-memory array (tests, and small collections embedded in process)."""
    from megazoo.core.fs import atomic_folder, write_json_atomic

    m = new_manifest(len(x), x.shape[1], shard_size, dtype, store_fingerprint, **settings)
    m["complete"] = True
    with atomic_folder(folder, overwrite) as tmp:
        for s in m["shards"]:
            write_shard(tmp / s["file"], np.ascontiguousarray(x[s["start"]:s["stop"]], dtype=dtype))
        write_json_atomic(tmp / "manifest.json", m)
    return open_vectors(folder)
