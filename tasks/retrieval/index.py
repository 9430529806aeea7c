"""The evidence index: passage vectors in faiss, with the passage ids beside them, on disk.

    index = build_index(vectors, "flat")                      # exact inner product (IndexFlatIP)
    index = build_index(vectors, "ivf", nlist=64, nprobe=8)    # approximate: IVF (k-means cells)
    index = build_index(vectors, "hnsw", m=32, ef_search=128)  # approximate: HNSW graph
    index = build_index(vectors, "IVF256,PQ16", nprobe=16)     # any faiss factory string
    scores, rows = search(index, queries, k)                   # [q, k] each, best first
    save_index(DIR, index, ids, meta); index, ids, meta = load_index(DIR, expect_dim=h, store=store)

`kind` is a faiss factory string (faiss.index_factory with inner product) or one of the old names,
kept as aliases: flat = "Flat", ivf = "IVF{nlist},Flat", hnsw = "HNSW{m}" (factory_spec).
Search-time knobs (nprobe, efSearch) go through faiss.ParameterSpace and are recorded in meta.json,
so a loaded index searches as it was measured.

DIR holds index.faiss, ids.npy (row -> passage id, int64) and meta.json (kind, factory, dim, count,
the store fingerprint, the encoder settings, the recall an approximate index keeps against exact
search). An index split by rows (index_build.py, `--index-shards K`) holds index-00000.faiss, ... with
their row ranges in meta.json["shards"]; load_index opens them as one faiss.IndexShards whose rows
are global (shard_search.py: ranks that each load only their own shards). Writing goes to a scratch folder of the writer's own that replaces DIR only when
complete (core.fs.atomic_folder), so a crash leaves no half index and an existing index is replaced
only with overwrite.

Device (`device` here, `--faiss-device` on the commands): `auto` puts flat and IVF indexes on every
GPU a GPU build of faiss sees (faiss-gpu; faiss-cpu sees none), `cpu` keeps them on the CPU, `gpu`
insists. HNSW has no GPU form and stays on the CPU under auto. Saved indexes are CPU indexes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

KINDS = ("flat", "ivf", "hnsw")
DEVICES = ("auto", "cpu", "gpu")
SINGLE = "index.faiss"


class IndexFolderError(ValueError):
    """An index folder that cannot serve this request (missing, another encoder's dimension, another store)."""


def faiss_complaint(e: Exception) -> str:
    """faiss's message without its C++ location prefix (`Error in ... at file.cpp:12: `), one line."""
    text = " ".join(str(e).split())
    text = re.sub(r"^Error in .*? at \S+:\d+: ", "", text)
    return re.sub(r"^Error: '.*?' failed: ", "", text)[:200]  # the C++ check that failed says nothing to a user


def default_nlist(n: int) -> int:
    """IVF cells when none are given: 4 sqrt(n), at most 4096 and at most n."""
    return max(1, min(4096, int(4 * np.sqrt(n)), n))


def factory_spec(kind: str, n: int, nlist: int | None = None, m: int = 32) -> str:
    """The faiss factory string of `kind` (an alias, or a factory string returned as it is)."""
    if kind == "flat":
        return "Flat"
    if kind == "ivf":
        return f"IVF{min(nlist or default_nlist(n), max(1, n))},Flat"
    if kind == "hnsw":
        return f"HNSW{m}"
    return kind


def make_index(spec: str, d: int):
    """An empty faiss index of the factory string `spec` for inner product; a bad string is one line."""
    import faiss

    if spec == "Flat":  # the factory gives an IndexFlat with this metric: the same index; keep its own class
        return faiss.IndexFlatIP(int(d))
    try:
        index = faiss.index_factory(int(d), spec, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as e:
        raise ValueError(f"--index-factory {spec!r}: faiss cannot make it for {d}-dimensional vectors "
                         f"({faiss_complaint(e)}); see the faiss wiki's 'The index factory' for the syntax") from None
    # the factory turns on polysemous training for 8-bit PQ (seconds per sub-quantizer); it only serves
    # Hamming pre-filtering (polysemous_ht), which search never sets, so the codes are the same without it
    inner = faiss.downcast_index(index.index) if isinstance(index, faiss.IndexPreTransform) else index
    try:
        inner = faiss.downcast_index(faiss.extract_index_ivf(inner))
    except RuntimeError:
        pass
    if hasattr(inner, "do_polysemous_training"):
        inner.do_polysemous_training = False
    return index


def check_factory(spec: str) -> None:
    """Refuse a factory string faiss cannot read, before any work (the vectors' size unknown yet: 3840
    divides by every usual sub-quantizer count, so only the syntax is judged)."""
    import faiss

    try:
        faiss.index_factory(3840, spec, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as e:
        raise ValueError(f"--index-factory {spec!r}: faiss cannot read it ({faiss_complaint(e)}); see the faiss "
                         f"wiki's 'The index factory' for the syntax") from None


def parts(index) -> list:
    """The indexes an IndexShards holds (downcast), or [index]."""
    import faiss

    if isinstance(index, faiss.IndexShards):
        return [faiss.downcast_index(index.at(i)) for i in range(index.count())]
    return [index]


def set_search(index, nprobe: int | None = None, ef_search: int | None = None) -> dict:
    """Set the search knobs that apply to this index (IVF: nprobe, capped at its cells; HNSW: efSearch)
    through faiss.ParameterSpace; returns those set, for meta.json. A CPU index."""
    import faiss

    done: dict = {}
    space = faiss.ParameterSpace()
    for part in parts(index):
        for name, value in (("nprobe", nprobe), ("efSearch", ef_search)):
            if value is None:
                continue
            if name == "nprobe":
                try:
                    value = min(int(value), int(faiss.extract_index_ivf(part).nlist))
                except RuntimeError:  # not an IVF index: nprobe does not apply
                    continue
            try:
                space.set_index_parameter(part, name, int(value))
                done[name] = int(value)
            except RuntimeError:  # "could not set parameter": the knob does not apply to this index
                pass
    return done


def train(index, x: np.ndarray, spec: str, seed: int = 0) -> None:
    """Train an index that needs it on `x` (k-means seeded), with faiss's complaint as one line."""
    import faiss

    if index.is_trained:
        return
    try:
        faiss.extract_index_ivf(index).cp.seed = seed
    except RuntimeError:
        pass
    try:
        index.train(np.ascontiguousarray(x, dtype=np.float32))
    except RuntimeError as e:
        raise ValueError(f"--index-factory {spec!r}: training on {len(x)} vectors failed ({faiss_complaint(e)}); "
                         f"use fewer cells/centroids or a larger --train-sample") from None


def gpus() -> int:
    """GPUs this faiss can use (0 for faiss-cpu)."""
    import faiss

    return int(faiss.get_num_gpus()) if hasattr(faiss, "get_num_gpus") else 0


def on_device(index, device: str = "auto"):
    """`index` moved to every visible GPU (device gpu, or auto when a GPU build sees one), else as it is;
    an IndexShards moves shard by shard."""
    import faiss

    if device not in DEVICES:
        raise ValueError(f"--faiss-device {device!r}; choose one of {', '.join(DEVICES)}")
    if isinstance(index, faiss.IndexShards):
        moved = [on_device(p, device) for p in parts(index)]  # refuses a device it cannot use
        if device == "cpu" or gpus() == 0:
            return index
        joined = shards_of(moved, index.d)
        joined.source = index  # keeps the CPU parts, owned by the old IndexShards' references, alive
        return joined
    n, graph = gpus(), isinstance(index, faiss.IndexHNSW)
    if device == "gpu" and (n == 0 or graph):
        why = "an HNSW index has no GPU form; use flat or ivf" if graph else (
            "this faiss sees no GPU (faiss-cpu, or no CUDA device); install a GPU build of faiss (conda's "
            "faiss-gpu) on a CUDA machine")
        raise IndexFolderError(f"--faiss-device gpu: {why}, or use --faiss-device cpu")
    if device == "cpu" or n == 0 or graph:
        return index
    return faiss.index_cpu_to_all_gpus(index)


def to_cpu(index):
    """A CPU copy of the index where faiss has GPUs (a GPU, replicated or CPU index alike), for writing
    and reconstructing; the index itself elsewhere."""
    import faiss

    return faiss.index_gpu_to_cpu(index) if gpus() else index


def shards_of(indexes: list, d: int):
    """One faiss.IndexShards over indexes of successive row ranges (rows come back global)."""
    import faiss

    joined = faiss.IndexShards(int(d), True, True)  # threaded, successive ids
    for part in indexes:
        joined.add_shard(part)  # faiss's Python layer keeps a reference to each part
    return joined


def build_index(vectors: np.ndarray, kind: str = "flat", nlist: int | None = None, nprobe: int | None = 8,
                m: int = 32, ef_search: int | None = 128, seed: int = 0, device: str = "cpu",
                train_sample: int | None = None, index_shards: int = 1):
    """A faiss index of in-memory `vectors` (trained and filled on `device`, see on_device); `kind` an
    alias or a factory string; trained on `train_sample` rows drawn with `seed` (all rows by default);
    `index_shards` > 1 gives an IndexShards over that many contiguous row ranges, one training shared.
    The streaming builder for a vectors folder is index_build.build_from_vectors."""
    import faiss

    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n, d = x.shape
    spec = factory_spec(kind, n, nlist, m)
    index = make_index(spec, d)
    set_search(index, nprobe, ef_search)  # before the move: a GPU copy takes the CPU index's knobs
    index = on_device(index, device)
    if not index.is_trained:
        sample = x
        if train_sample is not None and train_sample < n:
            sample = x[np.sort(np.random.default_rng(seed).choice(n, size=train_sample, replace=False))]
        train(index, sample, spec, seed)
    ranges = row_ranges(n, index_shards)
    if len(ranges) == 1:
        index.add(x)
        return index
    empty, filled = to_cpu(index), []
    for a, b in ranges:  # one training shared by every shard, so their scores compare
        part = on_device(faiss.clone_index(empty), device)
        part.add(x[a:b])
        filled.append(part)
    return shards_of(filled, d)


def row_ranges(n: int, k: int) -> list[tuple[int, int]]:
    """`k` contiguous row ranges covering 0..n (sizes differ by one at most; none empty unless n < k)."""
    cuts = np.linspace(0, n, max(1, k) + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]


def search(index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, rows) [q, k] of the top-k rows by inner product; k is capped at the index size."""
    k = min(k, index.ntotal)
    return index.search(np.ascontiguousarray(queries, dtype=np.float32), k)


def brute_force(passages: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact search with one numpy matrix product (the reference faiss Flat must equal)."""
    scores = queries.astype(np.float32) @ passages.astype(np.float32).T
    k = min(k, scores.shape[1])
    rows = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, rows, axis=1), rows


def recall_against_exact(rows: np.ndarray, exact_rows: np.ndarray) -> float:
    """The share of the exact top-k rows that an approximate search also returned."""
    k = exact_rows.shape[1]
    found = sum(len(set(a[:k].tolist()) & set(b.tolist())) for a, b in zip(rows, exact_rows))
    return found / max(1, exact_rows.size)


def stored_vectors(index) -> np.ndarray:
    """Every vector an index holds, in row order (IVF gets its direct map first; an IndexShards shard
    by shard, as faiss cannot reconstruct through one). Codes of PQ-like indexes come back decoded."""
    import faiss

    out = []
    for part in parts(to_cpu(index)):
        part = to_cpu(part)
        try:
            faiss.extract_index_ivf(part).make_direct_map()
        except RuntimeError:
            pass
        out.append(part.reconstruct_n(0, part.ntotal))
    return np.concatenate(out) if len(out) > 1 else out[0]


def shard_name(k: int) -> str:
    return f"index-{k:05d}.faiss"


def write_meta(folder: Path, meta: dict) -> None:
    (folder / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")


def save_index(folder, index, ids: np.ndarray, meta: dict, overwrite: bool = False) -> Path:
    """Write the index folder (an existing non-empty one is replaced only with `overwrite`); an
    IndexShards is written as one file per shard with its row range in meta.json["shards"]."""
    import faiss

    from megazoo.core.fs import atomic_folder

    folder = Path(folder)
    meta = {**meta, "dim": index.d, "count": int(index.ntotal)}
    with atomic_folder(folder, overwrite) as tmp:
        split = parts(index) if isinstance(index, faiss.IndexShards) else None
        if split is None:
            faiss.write_index(to_cpu(index), str(tmp / SINGLE))
        else:
            meta["shards"], start = [], 0
            for k, part in enumerate(split):
                faiss.write_index(to_cpu(part), str(tmp / shard_name(k)))
                meta["shards"].append({"file": shard_name(k), "start": start, "stop": start + int(part.ntotal)})
                start += int(part.ntotal)
        np.save(tmp / "ids.npy", np.asarray(ids, dtype=np.int64))
        write_meta(tmp, meta)
    return folder


def check_store(folder, meta: dict, ids: np.ndarray, store) -> None:
    """Refuse an index built from another passage store than `store` (open_store's): by the fingerprint
    meta.json records, or, for an index built from a .tsv before stores existed, by its ids."""
    if "store" in meta:
        if meta["store"] != store.fingerprint:
            raise IndexFolderError(f"{folder}: built from another store (fingerprint {str(meta['store'])[:12]}..., "
                                   f"{store.source} has {store.fingerprint[:12]}...); rebuild the index from vectors "
                                   f"of this store")
        return
    if len(ids) != len(store) or not np.array_equal(ids, np.asarray(store.ids)):
        raise IndexFolderError(f"{folder}: built from another store (its {len(ids)} passage ids are not those of "
                               f"{store.source}, {len(store)} passages); rebuild the index from this store")


def _read(path: Path):
    import faiss

    try:
        return faiss.read_index(str(path))
    except RuntimeError as e:  # faiss reports a damaged file as a RuntimeError with its C++ trace
        raise IndexFolderError(f"{path}: not a readable faiss index ({faiss_complaint(e)[:120]}); rebuild the "
                               f"index") from None


def shard_list(folder: Path, meta: dict, count: int) -> list[dict]:
    """The index files of a folder of `count` rows as [{"file", "start", "stop"}] in row order:
    meta.json["shards"] (checked: files of this folder, contiguous from row 0), or index.faiss."""
    shards = meta.get("shards")
    if not shards:
        return [{"file": SINGLE, "start": 0, "stop": count}]
    if not isinstance(shards, list) or any(not isinstance(s, dict) or {"file", "start", "stop"} - set(s)
                                           for s in shards):
        raise IndexFolderError(f"{folder / 'meta.json'}: a damaged shard list; rebuild the index")
    from megazoo.core.fs import inside

    start = 0
    for s in shards:
        if not inside(folder, s["file"]):  # a name from a file: never a path out of the folder
            raise IndexFolderError(f"{folder / 'meta.json'}: shard file {s['file']!r} is not a file of this folder; "
                                   f"rebuild the index")
        if s["start"] != start:
            raise IndexFolderError(f"{folder / str(s['file'])}: rows {s['start']}..{s['stop']} after row {start}; "
                                   f"the folder is damaged: rebuild the index")
        start = s["stop"]
    return shards


def read_shard(folder: Path, shard: dict):
    """One index file of shard_list, checked to hold its rows."""
    part = _read(folder / str(shard["file"]))
    if part.ntotal != shard["stop"] - shard["start"]:
        raise IndexFolderError(f"{folder / str(shard['file'])}: holds {part.ntotal} vectors for rows {shard['start']}.."
                               f"{shard['stop']}; the folder is damaged: rebuild the index")
    return part


def _read_all(folder: Path, meta: dict, count: int):
    """The index of a folder: index.faiss, or its shards joined into one IndexShards."""
    if not meta.get("shards"):
        return _read(folder / SINGLE)
    got = [read_shard(folder, s) for s in shard_list(folder, meta, count)]
    return shards_of(got, got[0].d)


def check_folder(folder: Path, expect_dim: int | None = None, expect_count: int | None = None,
                 expect_similarity: str | None = None, passages=None, store=None) -> tuple[np.ndarray, dict]:
    """(ids, meta) of an index folder, checked against what the caller expects (load_index's
    arguments) without reading its index files."""
    from megazoo.tasks.retrieval.vectors import read_json_object

    meta_path = folder / "meta.json"
    meta = read_json_object(meta_path, "an index folder", "rebuild the index with `megazoo task retrieval index`",
                            IndexFolderError)
    if expect_dim is not None and meta.get("dim") != expect_dim:
        raise IndexFolderError(f"{folder}: the index holds {meta.get('dim')}-dimensional vectors (encoder "
                               f"{meta.get('checkpoint')}), but this encoder gives {expect_dim}; rebuild the index "
                               f"with this checkpoint")
    if expect_similarity is not None and meta.get("similarity", "dot") != expect_similarity:
        raise IndexFolderError(f"{folder}: its passages were embedded for {meta.get('similarity', 'dot')} "
                               f"similarity, the questions for {expect_similarity}; rebuild it or pass --similarity")
    try:
        ids = np.load(folder / "ids.npy", allow_pickle=False)
    except (ValueError, EOFError, OSError) as e:
        raise IndexFolderError(f"{folder / 'ids.npy'}: not a readable id array ({e}); rebuild the index") from None
    if ids.ndim != 1:
        raise IndexFolderError(f"{folder / 'ids.npy'}: a {ids.ndim}-dimensional array, not one id per row; rebuild "
                               f"the index")
    if expect_count is not None and len(ids) != expect_count:
        name = passages if passages is not None else "the passages file"
        raise IndexFolderError(f"{folder}: the index holds {len(ids)} passages, {name} has {expect_count}; the index "
                               f"was built from another passages file: rebuild it from this one")
    if store is not None:
        check_store(folder, meta, ids, store)
    return ids, meta


def load_index(folder, expect_dim: int | None = None, expect_count: int | None = None, device: str = "cpu",
               expect_similarity: str | None = None, passages=None, store=None):
    """(faiss index on `device`, ids, meta) of a saved index; `expect_dim`: the encoder's vector size,
    `expect_similarity`: the similarity the questions are embedded for (an index without one is dot),
    `expect_count`: the passages of the file `passages` (named in the message when they differ),
    `store`: the passage store the evidence is read from (check_store). The search knobs of
    meta.json["search"] are set again; a sharded folder comes back as one IndexShards."""
    folder = Path(folder)
    meta_path = folder / "meta.json"
    if not meta_path.is_file() or not ((folder / SINGLE).is_file() or (folder / shard_name(0)).is_file()):
        raise IndexFolderError(f"{folder}: not a retrieval index (no index.faiss/meta.json); build one with "
                               f"`megazoo task retrieval index --vectors VEC --out {folder}` (or --passages FILE.tsv "
                               f"--checkpoint CKPT)")
    ids, meta = check_folder(folder, expect_dim, expect_count, expect_similarity, passages, store)
    index = _read_all(folder, meta, len(ids))
    if index.ntotal != len(ids):
        raise IndexFolderError(f"{folder}: the index holds {index.ntotal} vectors but ids.npy {len(ids)} ids; the "
                               f"folder is damaged: rebuild the index")
    knobs = meta.get("search") if isinstance(meta.get("search"), dict) else {}
    set_search(index, knobs.get("nprobe"), knobs.get("efSearch"))
    return on_device(index, device), ids, meta
