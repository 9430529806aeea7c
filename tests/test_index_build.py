"""Issue #38 point 3, the index part (index_build.py, index.py, cli_index.py): faiss factory strings built
from a vectors folder block by block, Flat equal to brute force, the block-wise exact top-k, per-shard
indexes searched as one IndexShards, recall against Flat recorded, a bounded build memory, and the
one-line refusals (a factory faiss cannot read, a damaged vectors folder, an index of another store),
with old single-file index folders still loading."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest

from megazoo.tasks.retrieval.index import (IndexFolderError, brute_force, build_index, load_index, save_index, search,
                                           stored_vectors)
from megazoo.tasks.retrieval.index_build import build_from_vectors, default_train_sample, exact_topk
from megazoo.tasks.retrieval.store import open_store
from megazoo.tasks.retrieval.vectors import save_vectors
from tests.cli_helpers import one_line, run_cli, snapshot

N, D = 2400, 16


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(0).standard_normal((N, D)).astype(np.float32)


@pytest.fixture
def vec(x, tmp_path):
    return save_vectors(tmp_path / "vec", x, shard_size=700)  # 4 shards, the last one short


def write_tsv(path, n: int, salt: str = ""):
    lines = ["id\ttext\ttitle"] + [f"{10 * i + 3}\tpassage {i}{salt} text\tTitle {i}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def queries(x, n=30, seed=1):
    rng = np.random.default_rng(seed)
    return x[rng.integers(0, len(x), n)] + 0.3 * rng.standard_normal((n, x.shape[1])).astype(np.float32)


@pytest.mark.parametrize("spec", ["Flat", "IVF16,Flat", "IVF16,PQ4", "HNSW8"])
def test_factory_strings_build_from_vectors_and_search(spec, x, vec, tmp_path):
    ids = np.arange(N) * 7 + 1
    meta = build_from_vectors(vec, tmp_path / "idx", spec, ids=ids, train_sample=1200, probes=200, progress=False)
    index, got_ids, saved = load_index(tmp_path / "idx")
    assert saved == json.loads((tmp_path / "idx" / "meta.json").read_text()) and saved["factory"] == spec
    assert index.ntotal == N and np.array_equal(got_ids, ids) and meta["count"] == N and meta["dim"] == D
    assert meta["trained_on"] == (0 if spec in ("Flat", "HNSW8") else 1200)
    assert meta["vectors"]["digest"] == vec.digest and meta["store"] == vec.store_fingerprint == "test"
    _, rows = search(index, queries(x), 10)
    exact = brute_force(x, queries(x), 10)[1]
    if spec == "Flat":
        assert np.array_equal(rows, exact) and "recall_at_10" not in meta  # exact by construction
    else:
        assert 0.0 < meta["recall_at_10"] <= 1.0 and 0.0 < meta["recall_at_100"] <= 1.0
        assert meta["recall_queries"] == 200 and meta["search"] == ({"efSearch": 128} if spec == "HNSW8" else
                                                                    {"nprobe": 8})
    if spec == "IVF16,PQ4":  # 4 bytes a vector for 64: a coarse code that loses neighbours
        assert meta["recall_at_10"] < 0.9


def test_flat_from_shards_equals_brute_force(x, vec, tmp_path):
    build_from_vectors(vec, tmp_path / "idx", "flat", ids=np.arange(N), block_rows=300, progress=False)
    index, _, meta = load_index(tmp_path / "idx")
    assert meta["kind"] == "flat" and np.array_equal(stored_vectors(index), x)  # every row, in row order
    scores, rows = search(index, queries(x), 20)
    ref_scores, ref_rows = brute_force(x, queries(x), 20)
    assert np.array_equal(rows, ref_rows) and np.allclose(scores, ref_scores, atol=1e-5)


@pytest.mark.parametrize("k", [1, 10, 250])
def test_blockwise_exact_topk_equals_numpy(k, x, vec):
    q = queries(x, 40, seed=k)
    scores, rows = exact_topk(vec, q, k, block_rows=97)  # blocks that cut across the shard files
    ref_scores, ref_rows = brute_force(x, q, k)
    assert rows.shape == (40, k) and np.array_equal(rows, ref_rows)
    assert np.allclose(scores, ref_scores, atol=1e-5)


def test_index_shards_give_the_same_top_k_as_one_index(x, vec, tmp_path):
    build_from_vectors(vec, tmp_path / "one", "Flat", ids=np.arange(N), progress=False)
    build_from_vectors(vec, tmp_path / "three", "Flat", ids=np.arange(N), index_shards=3, progress=False)
    meta = json.loads((tmp_path / "three" / "meta.json").read_text())
    assert [(s["file"], s["start"], s["stop"]) for s in meta["shards"]] == [
        ("index-00000.faiss", 0, 800), ("index-00001.faiss", 800, 1600), ("index-00002.faiss", 1600, 2400)]
    assert not (tmp_path / "three" / "index.faiss").exists() and not (tmp_path / "one" / "index-00000.faiss").exists()
    (one, _, _), (three, _, _) = load_index(tmp_path / "one"), load_index(tmp_path / "three")
    assert type(three).__name__ == "IndexShards" and three.ntotal == N
    a, b = search(one, queries(x), 50), search(three, queries(x), 50)
    assert np.array_equal(a[1], b[1]) and np.allclose(a[0], b[0], atol=1e-6)
    # an approximate index split in three (one training shared) keeps its recall; in memory too
    ivf1 = build_from_vectors(vec, tmp_path / "ivf1", "IVF16,Flat", ids=np.arange(N), probes=100, progress=False)
    ivf3 = build_from_vectors(vec, tmp_path / "ivf3", "IVF16,Flat", ids=np.arange(N), probes=100, index_shards=3,
                              progress=False)
    assert ivf1["recall_at_10"] == ivf3["recall_at_10"] < 1.0
    joined = build_index(x, "flat", index_shards=3)
    save_index(tmp_path / "mem", joined, np.arange(N), {"kind": "flat"})
    assert np.array_equal(search(load_index(tmp_path / "mem")[0], queries(x), 50)[1], a[1])


def test_build_memory_is_one_block_not_the_vectors(tmp_path):
    """numpy's allocations (tracemalloc sees them) while building from 4 MB of vectors stay about one
    block's worth: no step holds the collection (faiss's own index memory is outside numpy, not counted)."""
    big = np.random.default_rng(2).standard_normal((32768, 32)).astype(np.float32)
    vec = save_vectors(tmp_path / "vec", big, shard_size=8192)
    ids = np.arange(32768)
    build_from_vectors(vec, tmp_path / "warm", "IVF16,Flat", ids=ids, train_sample=1000, probes=50, progress=False)
    del big  # the warm-up imported faiss and tqdm: their import is not the build's memory
    tracemalloc.start()
    try:
        build_from_vectors(vec, tmp_path / "idx", "IVF16,Flat", ids=ids, train_sample=1000, probes=50,
                           block_rows=1024, progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # a few blocks' worth (a block is 128 KB; the 1000-row training sample as much), where a build
    # holding the vectors would allocate all 4 MB
    assert peak < 32768 * 32 * 4 / 6, peak


def test_train_sample_rule():
    assert default_train_sample(5_000, "IVF16,Flat") == 5_000  # never more than the collection
    assert default_train_sample(10**7, "IVF1024,Flat") == 100_000  # the floor
    assert default_train_sample(10**8, "IVF65536,PQ64") == 40 * 65536  # 40 points per k-means centroid
    assert default_train_sample(10**8, "OPQ64,IVF4096,PQ64x12") == 40 * 4096


def test_an_index_of_another_store_is_refused(x, tmp_path):
    a, b = open_store(write_tsv(tmp_path / "a.tsv", N)), open_store(write_tsv(tmp_path / "b.tsv", N, "!"))
    vec = save_vectors(tmp_path / "vec", x, shard_size=1000, store_fingerprint=a.fingerprint)
    build_from_vectors(vec, tmp_path / "idx", "Flat", store=a, progress=False)
    index, ids, meta = load_index(tmp_path / "idx", store=a)
    assert meta["store"] == a.fingerprint and np.array_equal(ids, a.ids)
    with pytest.raises(IndexFolderError) as err:
        load_index(tmp_path / "idx", store=b)
    assert "built from another store" in str(err.value) and len(str(err.value).splitlines()) == 1
    with pytest.raises(ValueError, match="is not the one the vectors in .* were embedded from"):
        build_from_vectors(vec, tmp_path / "idx2", "Flat", store=b, progress=False)


def test_old_style_index_folders_still_load(x, tmp_path):
    import faiss

    old = tmp_path / "old"
    old.mkdir()
    flat = faiss.IndexFlatIP(D)
    flat.add(x)
    faiss.write_index(flat, str(old / "index.faiss"))
    store = open_store(write_tsv(tmp_path / "a.tsv", N))
    np.save(old / "ids.npy", np.asarray(store.ids))
    (old / "meta.json").write_text(json.dumps({"kind": "flat", "checkpoint": "c", "dim": D, "count": N}))
    index, ids, meta = load_index(old, expect_dim=D, expect_count=N, store=store)
    assert index.ntotal == N and meta["kind"] == "flat"
    np.save(old / "ids.npy", np.asarray(store.ids) + 1)  # a .tsv-built index of other passages
    with pytest.raises(IndexFolderError, match="built from another store"):
        load_index(old, store=store)


def test_cli_builds_from_vectors_with_the_store_the_manifest_names(x, tmp_path, capsys):
    tsv = write_tsv(tmp_path / "psgs.tsv", N)
    store = open_store(tsv)
    save_vectors(tmp_path / "vec", x, shard_size=700, store_fingerprint=store.fingerprint, store_path=str(tsv))
    out = tmp_path / "idx"
    from megazoo.cli import main

    code = main(["task", "retrieval", "index", "--vectors", str(tmp_path / "vec"), "--out", str(out), "--index-factory",
                 "IVF16,Flat", "--nprobe", "4", "--index-shards", "2", "--train-sample", "900", "--recall-queries",
                 "100", "--faiss-device", "cpu"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    index, ids, meta = load_index(out, store=store)
    assert np.array_equal(ids, store.ids) and len(meta["shards"]) == 2 and meta["trained_on"] == 900
    assert meta["search"] == {"nprobe": 4} and faiss_nprobe(index) == [4, 4]
    assert meta["vectors"]["path"] == str((tmp_path / "vec").resolve()) and meta["recall_queries"] == 100
    assert f"recall@10 vs exact {meta['recall_at_10']:.4f}, recall@100 vs exact" in printed.out
    assert "vec/s" in printed.err  # the progress bar


def faiss_nprobe(index) -> list[int]:
    import faiss

    from megazoo.tasks.retrieval.index import parts

    return [faiss.extract_index_ivf(p).nprobe for p in parts(index)]


def refusal(capsys, root, *argv) -> str:
    before = snapshot(root)
    code, err = run_cli(capsys, "task", "retrieval", "index", *argv)
    assert code == 2 and snapshot(root) == before
    return one_line(err)


def test_cli_refusals_are_one_line(x, tmp_path, capsys):
    tsv = write_tsv(tmp_path / "psgs.tsv", N)
    save_vectors(tmp_path / "vec", x, shard_size=700, store_fingerprint=open_store(tsv).fingerprint)
    base = ["--vectors", tmp_path / "vec", "--store", tsv, "--out", tmp_path / "idx"]
    (tmp_path / "ckpt").mkdir()
    err = refusal(capsys, tmp_path, *base, "--index-factory", "IVF16,Fat")
    assert "--index-factory 'IVF16,Fat': faiss cannot make it for 16-dimensional vectors (could not parse code " \
           "description Fat in IVF16,Fat); see the faiss wiki" in err
    err = refusal(capsys, tmp_path, *base, "--index-factory", "IVF16,PQ5")
    assert "(d) should be a multiple of the number of subquantizers (M)" in err
    err = refusal(capsys, tmp_path, *base, "--index-factory", "IVF4096,Flat")  # more cells than vectors
    assert "--index-factory 'IVF4096,Flat': 4096 IVF cells but 2400 training vectors (of 2400)" in err
    err = refusal(capsys, tmp_path, *base, "--index-factory", "IVF16,Flat", "--train-sample", "10")
    assert "16 IVF cells but 10 training vectors" in err and "a larger --train-sample" in err
    err = refusal(capsys, tmp_path, "--passages", tsv, "--out", tmp_path / "idx")
    assert "--passages needs --checkpoint CKPT" in err
    err = refusal(capsys, tmp_path, *base, "--checkpoint", tmp_path / "ckpt")
    assert "--checkpoint goes with --passages" in err
    err = refusal(capsys, tmp_path, "--passages", tsv, "--checkpoint", tmp_path / "ckpt", "--out", tmp_path / "idx",
                  "--index-factory", "HNSW32,Fat")
    assert "--index-factory 'HNSW32,Fat': faiss cannot read it" in err
    # a shard that does not match its manifest (the vectors' own check, reported by the command)
    np.save(tmp_path / "vec" / "shard-00001.npy", x[:699])
    err = refusal(capsys, tmp_path, *base)
    assert "shard-00001.npy: holds (699, 16) float32, but its manifest says (700, 16) float32" in err
    assert "does not match its manifest" in err


def test_in_memory_build_takes_factory_strings_training_samples_and_shards(x):
    """The --passages form embeds in process and builds through index.build_index: the same options."""
    exact = brute_force(x, queries(x), 10)[1]
    joined = build_index(x, "IVF16,PQ4", nprobe=16, train_sample=600, index_shards=2)
    assert type(joined).__name__ == "IndexShards" and joined.ntotal == N
    from megazoo.tasks.retrieval.index import recall_against_exact

    assert 0.0 < recall_against_exact(search(joined, queries(x), 10)[1], exact) < 0.9
    assert np.array_equal(search(build_index(x, "IVF16,Flat", nprobe=16), queries(x), 10)[1], exact)  # every cell
    with pytest.raises(ValueError, match="--index-factory 'HNSW8,Fat': faiss cannot make it for 16-dimensional"):
        build_index(x, "HNSW8,Fat")
