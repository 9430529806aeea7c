"""Joint top-k (task.top_k_mode: joint, tasks/retrieval/reader/joint.py): the loss on hand-made
logits against a plain double loop over (passage, start, end), the best span likewise, individual
top-k unchanged; the gradient reaches the query tower; a tiny end-to-end run on the package's
generated data trains and evaluates; a bad mode is refused in one line."""

import json
import math
import os
from types import SimpleNamespace

import pytest
import torch

from megazoo.cli import main as megazoo
from megazoo.tasks.retrieval.inputs import Row
from megazoo.tasks.retrieval.reader import joint
from megazoo.tasks.retrieval.reader.data import collate
from megazoo.tasks.retrieval.reader.loss import question_losses, text_mask
from megazoo.tasks.retrieval.reader.span import answer_log_likelihood, marginal_loss, reader_row, span_log_probs
from tests.test_retrieval_reader_train import reader_cfg, retriever  # noqa: F401  (the tiny retriever fixture)

os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")

CLS, SEP = 101, 102
M = 3  # task.max_answer_tokens
# per question: (answers, the texts of its passages); the question is [5], the title [6]
QUESTIONS = [
    ([[11], [12, 11]], [[10, 11, 12, 11, 13], [14, 15, 16], [11, 17, 18, 19, 20, 21]]),  # several occurrences
    ([[99]], [[10, 11], [12, 13, 14], [15]]),  # no answer in any passage
    ([[30, 31, 32, 33]], [[30, 31, 32, 33, 5], [7, 8], [9]]),  # only an answer longer than M tokens
]


def batch(k: int, seed: int = 0):
    """(micro-batch of the questions with k passages each, their reader rows, start, end [n k, L] fp64)."""
    g = torch.Generator().manual_seed(seed)
    rows = [[reader_row([5], [6], t, answers, CLS, SEP, 32) for t in texts[:k]] for answers, texts in QUESTIONS]
    prior = torch.log_softmax(torch.randn(len(rows), k, generator=g), -1)
    samples = [{"rows": r, "question": Row([CLS, 5, SEP], [0, 0, 0]), "prior": prior[i]} for i, r in enumerate(rows)]
    mb = collate(samples, 0, end_to_end=False)
    shape = (mb["input_ids"].shape[0], mb["input_ids"].shape[1])
    start = torch.randn(shape, generator=g, dtype=torch.float64, requires_grad=True)
    end = torch.randn(shape, generator=g, dtype=torch.float64, requires_grad=True)
    return mb, rows, start, end


def loop_joint(rows, start, end, prior):
    """Per question: (-log p(a | q), (passage, start, end) of the best score), by plain loops."""
    out = []
    for q, passages in enumerate(rows):
        every, gold, best = [], [], (-math.inf, None)
        for z, r in enumerate(passages):
            at = q * len(passages) + z
            for s in range(r.text_start, r.text_end):
                for e in range(s, min(s + M, r.text_end)):
                    score = float(prior[q, z]) + float(start[at, s]) + float(end[at, e])
                    every.append(score)
                    if (s, e) in r.spans:
                        gold.append(score)
                    best = max(best, (score, (z, s, e)))
        loss = math.log(sum(map(math.exp, every))) - math.log(sum(map(math.exp, gold))) if gold else 0.0
        out.append((loss, best[1]))
    return out


@pytest.mark.parametrize("k", [2, 3])
def test_joint_loss_and_best_span_equal_the_double_loop(k):
    mb, rows, start, end = batch(k)
    got = question_losses(SimpleNamespace(start=start, end=end, query=None), mb, "joint", M)
    want = loop_joint(rows, start.detach(), end.detach(), mb["prior"])
    assert got.detach().tolist() == pytest.approx([w for w, _ in want], abs=1e-6)
    assert want[0][0] > 0 and want[1][0] == want[2][0] == 0.0  # q2: no answer; q3: its only answer is too long
    mask = text_mask(mb["text"], start.shape[1])
    # the questions counted: an answer that is a candidate span (q3's is not; individual counts it)
    assert joint.answerable(mb["spans"], mask, 3, M).tolist() == [True, False, False]
    assert mb["answerable"].tolist() == [1, 0, 1]
    for q, (_, span) in enumerate(want):
        at = slice(q * k, (q + 1) * k)
        assert joint.best_span(start[at].detach(), end[at].detach(), mask[at], mb["prior"][q], M) == span
    got.sum().backward()  # finite, and nothing for the questions without a loss
    assert torch.isfinite(start.grad).all() and float(start.grad[k:].abs().sum()) == 0.0


def test_individual_loss_is_unchanged():
    """The default mode is span.py's per-passage marginal likelihood, as before."""
    mb, rows, start, end = batch(3, seed=1)
    out = SimpleNamespace(start=start, end=end, query=None)
    default, individual = question_losses(out, mb), question_losses(out, mb, "individual", M)
    assert torch.equal(default, individual)
    L = start.shape[1]
    for q, passages in enumerate(rows):
        ls, le = span_log_probs(start[3 * q:3 * q + 3], end[3 * q:3 * q + 3], text_mask(mb["text"][3 * q:3 * q + 3], L))
        want = marginal_loss(mb["prior"][q], answer_log_likelihood(ls, le, passages))
        assert float(default[q].detach()) == pytest.approx(0.0 if want is None else float(want.detach()), abs=1e-6)
    assert float(default[2].detach()) > 0  # individual top-k reads q3's long answer


def test_joint_gradient_reaches_the_query_tower():
    """End to end, log p(z | q) is the query vectors against the passages' context vectors: one
    backward of the joint loss gives the query tower's weights a gradient."""
    mb, _, start, end = batch(3, seed=2)
    g = torch.Generator().manual_seed(3)
    tower = torch.nn.Linear(8, 4)
    mb["ctx"] = torch.randn(3, 3, 4, generator=g)
    query = tower(torch.randn(3, 8, generator=g))
    question_losses(SimpleNamespace(start=start, end=end, query=query), mb, "joint", M).sum().backward()
    assert float(tower.weight.grad.abs().sum()) > 0 and torch.isfinite(tower.weight.grad).all()


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The package's generated set, cut to what a 96-token tiny reader can read: two training and two
    test questions whose answer is in the first 25 words of their passage, and those four passages
    as the collection (top_k 4: every question reads its passage)."""
    from megazoo.tasks.retrieval.generate import generate_retrieval

    root = tmp_path_factory.mktemp("joint")
    gen = root / "gen"
    generate_retrieval(gen, seed=0, corpus="stdlib")

    ids: set = set()

    def pick(name: str) -> list:  # two questions, each of its own passage
        out = []
        for q in json.loads((gen / name).read_text()):
            pos = q["positive_ctxs"][0]
            early = q["answers"][0] in " ".join(pos["text"].split()[:25])
            if len(out) < 2 and early and str(pos["passage_id"]) not in ids:
                out.append(q)
                ids.add(str(pos["passage_id"]))
        return out

    train, test = pick("nq-train.json"), pick("nq-test.json")
    lines = (gen / "psgs_w100.tsv").read_text().splitlines()
    (root / "psgs.tsv").write_text("\n".join([lines[0]] + [x for x in lines[1:] if x.split("\t")[0] in ids]) + "\n")
    (root / "train.json").write_text(json.dumps(train))
    (root / "test.json").write_text(json.dumps(test))
    assert len(ids) == 4
    return root


def test_joint_end_to_end_trains_and_evaluates(retriever, generated, monkeypatch):  # noqa: F811
    from megazoo.tasks.retrieval.reader.train import train_reader
    from megazoo.tasks.retrieval.towers import tower_state
    from megazoo.zoo.pretrained import read_full

    root, ckpt = retriever
    d = generated
    calls = {"question_losses": 0, "best_span": 0}  # the loss and the evaluation go through joint.py
    for name in calls:
        def counted(*args, _f=getattr(joint, name), _name=name):
            calls[_name] += 1
            return _f(*args)
        monkeypatch.setattr(joint, name, counted)
    run = train_reader(reader_cfg("e2e", ckpt, root / "joint", f"task.passages={d / 'psgs.tsv'}",
                                  f"task.train_file={d / 'train.json'}", f"task.test_file={d / 'test.json'}",
                                  "task.top_k_mode=joint", "task.top_k=4", "task.reader_length=96", "train.steps=6"))
    assert calls["question_losses"] >= 6 and calls["best_span"] >= 2, calls
    losses = run["losses"]
    assert len(losses) == 6 and all(x > 0 for x in losses) and losses[-1] < 0.9 * losses[0], losses
    assert set(run["metrics"]) == {"em", "f1", "top4_recall", "retrieval_top1", "retrieval_top5", "retrieval_top20"}
    assert run["n"] == 2 and run["metrics"]["top4_recall"] == 1.0 and all(0 <= v <= 1 for v in run["metrics"].values())
    record = json.loads((root / "joint" / "reader.json").read_text())
    assert record["metrics"] == pytest.approx(run["metrics"]) and record["component"] == "e2e"
    preds = (root / "joint" / "reader.predictions.jsonl").read_text().splitlines()
    assert len(preds) == 2 and all(len(json.loads(x)["ids"]) == 4 for x in preds)
    before = tower_state(read_full(ckpt)[2], "query")
    after = tower_state(read_full(run["retriever_out"])[2], "query")
    assert max(float((after[n].float() - v.float()).abs().max()) for n, v in before.items()) > 0, "query tower still"


def test_bad_top_k_mode_is_one_line(capsys):
    from megazoo.tasks.retrieval.reader.task import ReaderTask

    assert megazoo(["task", "retrieval", "train", "retrieval-e2e", "--set", "task.top_k_mode=both"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "task.top_k_mode='both'; choose one of individual, joint" in err
    # joint on fixed retrieval is the reader's shared normalisation: accepted (task.py)
    assert ReaderTask.from_dict({"component": "reader", "retriever": "r", "top_k_mode": "joint"}).top_k_mode == "joint"
