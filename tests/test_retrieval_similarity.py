"""task.similarity (dot | cosine) and task.score_scale: the training loss equals the softmax
cross-entropy computed by hand in numpy; a cosine run's checkpoint carries its similarity into
`index` and `evaluate`, whose top-k equals numpy cosine search over the same encoder's raw vectors;
global negatives keep dp=2 equal to dp=1 under cosine; a cosine index is refused for dot questions."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from megazoo.cli import main as megazoo
from megazoo.core.parallel.launch import spawn
from megazoo.core.train.config import ConfigError
from tests.test_retrieval_eval import reference_has_answer
from tests.test_retrieval_train import FIXTURE, TOL, make_tiny_bert, rank_runs

COSINE = ["task.similarity=cosine", "task.score_scale=20"]
TINY = {"arch": "bert", "num_layers": 1, "hidden_size": 16, "num_heads": 2, "vocab_size": 100, "seq_length": 512}


def builder(**task):
    from megazoo.tasks.retrieval.builder import RetrievalBuilder

    return RetrievalBuilder(dict(task), dict(TINY))


def hand_loss(q, p, labels, cosine: bool, scale: float, sqrt_h: bool) -> float:
    q, p = q.astype(np.float64), p.astype(np.float64)
    if cosine:
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        p = p / np.linalg.norm(p, axis=1, keepdims=True)
    s = scale * (q @ p.T) / (np.sqrt(q.shape[1]) if sqrt_h else 1.0)
    m = s.max(1, keepdims=True)
    logz = (m + np.log(np.exp(s - m).sum(1, keepdims=True)))[:, 0]
    return float(np.mean(logz - s[np.arange(len(q)), labels]))


@pytest.mark.parametrize("task,cosine,scale,sqrt_h", [
    ({}, False, 1.0, False),  # the default: the raw inner product, as before the setting existed
    ({"similarity": "cosine", "score_scale": 20}, True, 20.0, False),
    ({"similarity": "cosine", "score_scale": 0.5, "score_scaling": True}, True, 0.5, True),
    ({"similarity": "dot", "score_scale": 3.0}, False, 3.0, False)])
def test_loss_equals_hand_computation(task, cosine, scale, sqrt_h):
    b = builder(**task)
    rng = np.random.default_rng(3)
    n, negatives = 4, 4
    emb = rng.standard_normal((2 * n + negatives, 16)).astype(np.float32) * rng.uniform(0.5, 4, (2 * n + negatives, 1))
    labels = torch.cat([torch.tensor([0, 1, 2, 3]), torch.full((n + negatives,), -100)])
    loss = b.loss(SimpleNamespace(embedding=torch.from_numpy(emb)), {"labels": labels}, {"questions": n})
    ref = hand_loss(emb[:n], emb[n:], np.arange(n), cosine, scale, sqrt_h)
    assert float(loss) == pytest.approx(ref, rel=1e-5)


def test_bad_similarity_settings():
    with pytest.raises(ConfigError, match=r"task.similarity='cos'; choose one of dot, cosine"):
        builder(similarity="cos")
    with pytest.raises(ConfigError, match=r"task.score_scale must be > 0, got 0"):
        builder(score_scale=0)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cosine")
    init = make_tiny_bert(root / "tiny")
    single = rank_runs(init, str(root), [("cos", COSINE)])
    dp2 = spawn(rank_runs, 2, init, str(root), [("cos-dp2", ["train.micro_batch=2", *COSINE])], timeout=600)
    return root, single, dp2


def test_cosine_dp2_equals_dp1(runs):
    _, single, multi = runs
    ref = single["cos"]["losses"]
    assert len(ref) == 3 and ref[-1] != ref[0]
    for rank, got in enumerate(multi):
        diff = max(abs(a - b) for a, b in zip(got["cos-dp2"]["losses"], ref))
        assert diff <= TOL, f"rank {rank}: cosine dp=2 losses differ from dp=1 by {diff:.2e}"
        assert got["cos-dp2"]["valid"]["avg_rank"] == pytest.approx(single["cos"]["valid"]["avg_rank"], abs=TOL)


def test_cosine_checkpoint_evaluates_as_numpy_cosine(runs, capsys):
    import ast
    import csv

    from megazoo.tasks.retrieval.encoder import BiEncoder

    root, _, _ = runs
    ckpt = root / "cos" / "checkpoints"
    enc = BiEncoder(ckpt)
    assert enc.similarity == "cosine"  # from the run's task settings
    with open(FIXTURE / "psgs.tsv", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t"))[1:]
    ids, texts, titles = [int(r[0]) for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    qas = [line.split("\t") for line in (FIXTURE / "nq-test.csv").read_text().splitlines()]
    questions, answers = [q for q, _ in qas], [ast.literal_eval(a) for _, a in qas]
    raw = BiEncoder(ckpt, similarity="dot")  # the same encoder's unnormalised vectors
    q, p = raw.questions(questions).astype(np.float64), raw.passages(titles, texts).astype(np.float64)
    assert abs(np.linalg.norm(p, axis=1) - 1).max() > 1e-3  # so normalising matters
    cos = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (p / np.linalg.norm(p, axis=1, keepdims=True)).T
    order = np.argsort(-cos, axis=1, kind="stable")
    hit = [[reference_has_answer(a, texts[j]) for j in row] for a, row in zip(answers, order)]
    metrics = {f"top{k}": sum(any(h[:k]) for h in hit) / len(hit) for k in (1, 2, 5)}
    # dot ranks differently on this checkpoint, so the check can fail
    assert (np.argsort(-(q @ p.T), axis=1, kind="stable") != order).any()
    index = root / "cos-index"
    assert megazoo(["task", "retrieval", "index", "--passages", str(FIXTURE / "psgs.tsv"), "--checkpoint", str(ckpt),
                    "--out", str(index)]) == 0
    assert json.loads((index / "meta.json").read_text())["similarity"] == "cosine"
    args = ["task", "retrieval", "evaluate", "--passages", str(FIXTURE / "psgs.tsv"), "--qas",
            str(FIXTURE / "nq-test.csv"), "--checkpoint", str(ckpt), "--top-k", "1,2,5"]
    for name, extra in (("mem", []), ("idx", ["--index", str(index)])):
        assert megazoo(args + extra + ["--out", str(root / f"{name}.json")]) == 0
        record = json.loads((root / f"{name}.json").read_text())
        assert record["similarity"] == "cosine" and record["metrics"] == metrics, name
        preds = [json.loads(line) for line in (root / f"{name}.predictions.jsonl").read_text().splitlines()]
        assert [x["ids"] for x in preds] == [[ids[j] for j in row[:5]] for row in order], name
    capsys.readouterr()
    assert megazoo(args + ["--index", str(index), "--similarity", "dot", "--out", str(root / "bad.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"megazoo task retrieval evaluate: error: {index}: its passages were embedded for cosine "
                   f"similarity, the questions for dot; rebuild it or pass --similarity")
    # without --similarity the questions take the index's own (issue #41): a dot index of this cosine run
    dot_index = root / "dot-index"
    assert megazoo(["task", "retrieval", "index", "--passages", str(FIXTURE / "psgs.tsv"), "--checkpoint", str(ckpt),
                    "--similarity", "dot", "--out", str(dot_index)]) == 0
    assert megazoo(args + ["--index", str(dot_index), "--out", str(root / "dot.json")]) == 0
    assert json.loads((root / "dot.json").read_text())["similarity"] == "dot"


def test_ict_asks_a_fresh_sentence_each_epoch_and_block_length(tmp_path):
    """Epoch e of the shuffled ICT source asks another sentence of the same blocks (several
    queries per block over a run); task.ict_block_length cuts smaller blocks, hence more of them."""
    from megazoo.core.data import build_tokenizer
    from megazoo.tasks.retrieval.generate import write_ict_data
    from megazoo.tasks.retrieval.inputs import RowEncoder
    from megazoo.tasks.retrieval.sources import ICTExamples, Shuffled, ict_blocks

    docs = [(f"Title {d}", [f"Sentence {i} of document {d} names thing{d}x{i} here." for i in range(8)])
            for d in range(6)]
    write_ict_data(tmp_path / "ict", docs)
    tok = build_tokenizer("bert-wordpiece")
    made = {n: ict_blocks(str(tmp_path / "ict" / "text"), "train", "100,0,0", 96, 0, str(tmp_path / "cache"),
                          str(tmp_path / "ict" / "titles"), block_length=n) for n in (0, 40)}
    assert len(made[40][0]) > len(made[0][0])
    blocks, titles, doc_index = made[0]
    source = Shuffled(ICTExamples(blocks, RowEncoder(tok, 24, 96), 0, 0.0, titles, doc_index), 0)
    n = len(source)

    def epoch(e):  # block (its context with the query put back, as a set of tokens) -> query
        out = {}
        for i in range(e * n, (e + 1) * n):
            q, (c,) = source.get(i)
            out[tuple(sorted(c.ids + q.ids))] = tuple(q.ids)
        return out

    first, second = epoch(0), epoch(1)
    assert set(first) == set(second)  # the same blocks every epoch
    assert sum(first[b] != second[b] for b in first) >= n // 2  # mostly other query sentences


def test_reader_stages_refuse_a_cosine_retriever(runs):
    from megazoo.tasks.retrieval.data import read_passages
    from megazoo.tasks.retrieval.reader.data import Evidence

    root, _, _ = runs
    ckpt = root / "cos" / "checkpoints"
    with pytest.raises(ConfigError, match=r"a cosine-similarity retriever; the reader's p\(z \| q\) is the softmax"):
        Evidence(ckpt, read_passages(FIXTURE / "psgs.tsv"), 16, 64)
