"""The evidence index: passage vectors in faiss, with the passage ids beside them, on disk.

    index = build_index(vectors, "flat")                      # exact inner product (IndexFlatIP)
    index = build_index(vectors, "ivf", nlist=64, nprobe=8)    # approximate: IVF (k-means cells)
    index = build_index(vectors, "hnsw", m=32, ef_search=128)  # approximate: HNSW graph
    scores, rows = search(index, queries, k)                   # [q, k] each, best first
    save_index(DIR, index, ids, meta); index, ids, meta = load_index(DIR, expect_dim=h)

DIR holds index.faiss, ids.npy (row -> passage id, int64) and meta.json (kind, dim, count, the
encoder checkpoint and pooling, and for an approximate index the recall it keeps against exact
search). Writing goes to a scratch folder of the writer's own that replaces DIR only when complete
(core.fs.atomic_folder), so a crash leaves no half index and an existing index is replaced only
with overwrite.

Device (`device` here, `--faiss-device` on the commands): `auto` puts flat and IVF indexes on every
GPU a GPU build of faiss sees (faiss-gpu; faiss-cpu sees none), `cpu` keeps them on the CPU, `gpu`
insists. HNSW has no GPU form and stays on the CPU under auto. Saved indexes are CPU indexes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

KINDS = ("flat", "ivf", "hnsw")
DEVICES = ("auto", "cpu", "gpu")


class IndexFolderError(ValueError):
    """An index folder that cannot serve this request (missing, another encoder's dimension)."""


def gpus() -> int:
    """GPUs this faiss can use (0 for faiss-cpu)."""
    import faiss

    return int(faiss.get_num_gpus()) if hasattr(faiss, "get_num_gpus") else 0


def on_device(index, device: str = "auto"):
    """`index` moved to every visible GPU (device gpu, or auto when a GPU build sees one), else as it is."""
    import faiss

    if device not in DEVICES:
        raise ValueError(f"--faiss-device {device!r}; choose one of {', '.join(DEVICES)}")
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


def build_index(vectors: np.ndarray, kind: str = "flat", nlist: int | None = None, nprobe: int = 8,
                m: int = 32, ef_search: int = 128, seed: int = 0, device: str = "cpu"):
    """A faiss index of `vectors` (trained and filled on `device`, see on_device)."""
    import faiss

    if kind not in KINDS:
        raise ValueError(f"unknown index {kind!r}; choose one of {', '.join(KINDS)}")
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n, d = x.shape
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    elif kind == "ivf":
        nlist = nlist or max(1, min(4096, int(4 * np.sqrt(n))))
        nlist = min(nlist, n)
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = seed
        index.nprobe = min(nprobe, nlist)
    else:
        index = faiss.IndexHNSWFlat(d, m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = ef_search
    index = on_device(index, device)
    if kind == "ivf":
        index.train(x)
    index.add(x)
    return index


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
    """Every vector an index holds, in row order (IVF gets its direct map first)."""
    import faiss

    index = to_cpu(index)
    if isinstance(index, faiss.IndexIVF):
        index.make_direct_map()
    return index.reconstruct_n(0, index.ntotal)


def save_index(folder, index, ids: np.ndarray, meta: dict, overwrite: bool = False) -> Path:
    """Write the index folder (an existing non-empty one is replaced only with `overwrite`)."""
    import faiss

    from megazoo.core.fs import atomic_folder

    folder = Path(folder)
    with atomic_folder(folder, overwrite) as tmp:
        faiss.write_index(to_cpu(index), str(tmp / "index.faiss"))
        np.save(tmp / "ids.npy", np.asarray(ids, dtype=np.int64))
        (tmp / "meta.json").write_text(json.dumps({**meta, "dim": index.d, "count": int(index.ntotal)}, indent=1),
                                       encoding="utf-8")
    return folder


def load_index(folder, expect_dim: int | None = None, expect_count: int | None = None, device: str = "cpu",
               expect_similarity: str | None = None, passages=None):
    """(faiss index on `device`, ids, meta) of a saved index; `expect_dim`: the encoder's vector size,
    `expect_similarity`: the similarity the questions are embedded for (an index without one is dot),
    `expect_count`: the passages of the file `passages` (named in the message when they differ)."""
    import faiss

    folder = Path(folder)
    if not (folder / "index.faiss").is_file() or not (folder / "meta.json").is_file():
        raise IndexFolderError(f"{folder}: not a retrieval index (no index.faiss/meta.json); build one with "
                          f"`megazoo task retrieval index --passages FILE.tsv --checkpoint CKPT --out {folder}`")
    try:
        meta = json.loads((folder / "meta.json").read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IndexFolderError(f"{folder / 'meta.json'}: not the JSON an index folder holds ({type(e).__name__}); "
                               f"rebuild the index with `megazoo task retrieval index`") from None
    if not isinstance(meta, dict):
        raise IndexFolderError(f"{folder / 'meta.json'}: not the JSON object an index folder holds; rebuild the index")
    if expect_dim is not None and meta.get("dim") != expect_dim:
        raise IndexFolderError(f"{folder}: the index holds {meta.get('dim')}-dimensional vectors (encoder "
                          f"{meta.get('checkpoint')}), but this encoder gives {expect_dim}; rebuild the index with "
                          f"this checkpoint")
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
    try:
        index = faiss.read_index(str(folder / "index.faiss"))
    except RuntimeError as e:  # faiss reports a damaged file as a RuntimeError with its C++ trace
        first = str(e).strip().splitlines()[-1:] or [""]
        raise IndexFolderError(f"{folder / 'index.faiss'}: not a readable faiss index ({first[0][:120]}); rebuild "
                               f"the index") from None
    if index.ntotal != len(ids):
        raise IndexFolderError(f"{folder}: index.faiss holds {index.ntotal} vectors but ids.npy {len(ids)} ids; the "
                               f"folder is damaged: rebuild the index")
    return on_device(index, device), ids, meta
