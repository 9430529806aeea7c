"""The index and evaluate stages: embed a passage collection into a faiss index, and score a
retriever's top-k accuracy on a question set (DPR's protocol, evaluate.py).

    index_passages("psgs_w100.tsv", "ckpt", "runs/index", kind="flat")
    record, predictions = evaluate_retriever("psgs_w100.tsv", "nq-test.csv", "ckpt", ks=(1, 5, 20, 100))
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from megazoo.eval.metrics import top_k_accuracy
from megazoo.eval.taskkit import evaluation_record
from megazoo.tasks.retrieval.data import read_passages, read_qas
from megazoo.tasks.retrieval.evaluate import KS, hits
from megazoo.tasks.retrieval.index import (IndexFolderError, brute_force, build_index, load_index,
                                           recall_against_exact, save_index, search, stored_vectors)


def _encoder(checkpoint, pooling, batch: int, question_length: int, passage_length: int, similarity=None):
    from megazoo.tasks.retrieval.encoder import BiEncoder

    return BiEncoder(checkpoint, pooling, question_length, passage_length, batch, similarity=similarity)


def embed_shard(passages, checkpoint, pooling, batch: int, passage_length, progress: bool = True, similarity=None):
    """Rank r of N embeds passages r, r + N, ... (a progress bar on rank 0); returns
    (vectors, pooling, passage length, similarity). Run on every rank by `spawn`."""
    import torch.distributed as dist

    rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    rows = read_passages(passages)[rank::world]
    enc = _encoder(checkpoint, pooling, batch, None, passage_length, similarity)
    vecs = enc.passages([p.title for p in rows], [p.text for p in rows], progress=progress and rank == 0)
    return vecs, enc.pooling, enc.passage_length, enc.similarity


def index_passages(passages, checkpoint, out, kind: str = "flat", pooling: str | None = None, batch: int = 32,
                   passage_length: int | None = None, progress: bool = True, nproc: int = 1,
                   similarity: str | None = None, overwrite: bool = False, **index_options) -> dict:
    """Embed every passage (on `nproc` local ranks, each a strided share), build the index, measure
    an approximate index's recall against exact search (on up to 1000 passage vectors used as
    queries), write it to `out` (an existing non-empty folder is replaced only with `overwrite`);
    returns its meta."""
    from megazoo.tasks.retrieval.store import MemoryStore

    store = MemoryStore(passages)  # a malformed file fails here, before any rank starts
    rows = store.passages
    if not Path(checkpoint).is_dir():
        raise FileNotFoundError(f"--checkpoint {checkpoint}: no such folder (a retrieval run's checkpoints/, an "
                                f"import-hf folder or an HF BERT folder)")
    t0 = time.perf_counter()
    if nproc > 1:
        from megazoo.core.parallel.launch import spawn

        # a bad checkpoint or setting (a passage length beyond the model's positions) fails here, once,
        # before any rank starts
        _encoder(checkpoint, pooling, batch, None, passage_length, similarity)

        parts = spawn(embed_shard, nproc, passages, checkpoint, pooling, batch, passage_length, progress,
                      similarity, timeout=7 * 24 * 3600.0)
        vecs = np.empty((len(rows), parts[0][0].shape[1]), dtype=np.float32)
        for r, (part, *_) in enumerate(parts):
            vecs[r::nproc] = part
        _, used_pooling, used_length, used_similarity = parts[0]
    else:
        vecs, used_pooling, used_length, used_similarity = embed_shard(passages, checkpoint, pooling, batch,
                                                                       passage_length, progress, similarity)
    embed_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = build_index(vecs, kind, **index_options)
    build_s = time.perf_counter() - t0
    meta = {"kind": kind, "checkpoint": str(checkpoint), "pooling": used_pooling, "passages": str(passages),
            "store": store.fingerprint,
            "passage_length": used_length, "similarity": used_similarity, "embed_s": embed_s, "build_s": build_s,
            "ranks": nproc}
    if kind != "flat":
        probe = vecs[np.linspace(0, len(vecs) - 1, min(1000, len(vecs))).astype(int)]
        k = min(10, len(vecs))
        meta["recall_at_10"] = recall_against_exact(search(index, probe, k)[1], brute_force(vecs, probe, k)[1])
    save_index(out, index, np.array([p.id for p in rows], dtype=np.int64), meta, overwrite=overwrite)
    return meta


def evaluate_retriever(passages, qas, checkpoint, index_dir=None, pooling: str | None = None, ks=KS,
                       match: str = "string", batch: int = 32, question_length: int | None = None,
                       passage_length: int | None = None, progress: bool = False,
                       similarity: str | None = None, faiss_device: str = "auto",
                       shard_ranks: bool = False) -> tuple[dict, list[dict]]:
    """(summary record `{"task", "n", "metrics", ...}`, per-question predictions): top-k accuracy as
    a fraction for each k (top1, top5, ...), and each question's ranked passage ids with their hits;
    the search runs on `faiss_device` (index.on_device). `passages`: a passage store (store.py: read
    by row, any size) or a psgs_w100.tsv (read into memory). Without `index_dir` the passages are
    embedded here, in this process (small collections). cli_evaluate.py writes both through the
    task-evaluation kit (eval/taskkit.write_evaluation). `shard_ranks` (every rank of an initialised
    process group calls this, e.g. under torchrun): each rank loads only its shards of a sharded
    `index_dir` and the ranks' top-k are merged (shard_search.py); every rank returns the same record."""
    from megazoo.tasks.retrieval.store import open_store

    store = open_store(passages)
    questions = read_qas(qas)
    if index_dir is not None and similarity is None:  # the questions are embedded as the index's passages were
        similarity = _index_similarity(index_dir)
    enc = _encoder(checkpoint, pooling, batch, question_length, passage_length, similarity)
    k = max(ks)
    q = enc.questions([x.question for x in questions], progress=progress)
    extra: dict = {}
    if index_dir is not None and shard_ranks:  # this rank's shards only; the merged top-k on every rank
        from megazoo.tasks.retrieval.shard_search import search_shards

        _, found = search_shards(index_dir, q, k, expect_dim=enc.hidden_size, expect_similarity=enc.similarity,
                                 store=store, device=faiss_device)
        ids = np.load(Path(index_dir) / "ids.npy", mmap_mode="r", allow_pickle=False)
        extra["index_shards_by_rank"] = True  # no recall against exact search: no rank holds every vector
    elif index_dir is not None:
        index, ids, meta = load_index(index_dir, expect_dim=enc.hidden_size, expect_count=len(store),
                                      device=faiss_device, expect_similarity=enc.similarity, passages=passages,
                                      store=store)
        _, found = search(index, q, k)
        if meta.get("kind", "flat") != "flat":  # what the approximation costs on these very questions
            extra["index_recall"] = recall_against_exact(found, _exact(index, meta, q, k))
            extra["index_kind"] = meta["kind"]
    else:
        rows = list(store)
        vecs = enc.passages([p.title for p in rows], [p.text for p in rows], progress=progress)
        _, found = search(build_index(vecs, "flat", device=faiss_device), q, k)
        ids = store.ids
    at = store.row_of(np.asarray(ids)[np.where(found >= 0, found, 0)])  # index row -> passage id -> store row
    if index_dir is not None and bool((at[found >= 0] < 0).any()):
        raise IndexFolderError(f"{index_dir}: holds passage ids that {passages} lacks; it was built from another "
                               f"passages file: rebuild it from this one")
    predictions, hit_lists = [], []
    for x, r, rows in zip(questions, found, at):
        ranked = [store[j] for i, j in zip(r, rows) if i >= 0]
        h = hits(x.answers, [p.text for p in ranked], match)
        hit_lists.append(h)
        predictions.append({"question": x.question, "answers": x.answers, "ids": [p.id for p in ranked], "hits": h})
    record = evaluation_record("retrieval", len(questions), top_k_accuracy(hit_lists, ks), checkpoint=str(checkpoint),
                               pooling=enc.pooling, similarity=enc.similarity, passages=str(passages), qas=str(qas),
                               match=match, **extra)
    return record, predictions


def _index_similarity(folder) -> str | None:
    """The similarity an index folder records (None when it has no readable meta.json: load_index says why)."""
    import json

    try:
        meta = json.loads((Path(folder) / "meta.json").read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return meta.get("similarity") if isinstance(meta, dict) else None


def _exact(index, meta: dict, q: np.ndarray, k: int) -> np.ndarray:
    """Exact top-k rows of the questions: block by block over the index's vectors folder when it names
    one that is still there, else from the vectors the index stores."""
    from megazoo.tasks.retrieval.vectors import VectorsError, open_vectors

    folder = meta["vectors"].get("path") if isinstance(meta.get("vectors"), dict) else None
    if folder:
        try:
            from megazoo.tasks.retrieval.index_build import exact_topk

            return exact_topk(open_vectors(folder), q, k)[1]
        except (VectorsError, OSError):
            pass
    return brute_force(stored_vectors(index), q, k)[1]
