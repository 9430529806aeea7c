"""The bi-encoder on the core trainer with a tiny random BERT on the fixture's DPR json: global
in-batch negatives make dp=2 (micro-batch 2) equal dp=1 (micro-batch 4) with the same global batch
(and without the gather the losses differ, so the check can fail); tp=2 equals tp=1; the trained
checkpoint then indexes and evaluates through the commands; ICT runs on a sentence-split .bin/.idx.
Separate query/context towers (task.shared_towers=false) keep both parities."""

import json
import os
from pathlib import Path

import pytest

from megazoo.cli import main as megazoo
from megazoo.core.parallel.launch import spawn
from tests.evaluation_shape import check_evaluation

os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")

FIXTURE = Path(__file__).parent / "fixtures" / "retrieval"
TOL = 1e-5


def make_tiny_bert(path: Path) -> str:
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.bert import BertModel, megatron_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = megatron_bert(num_layers=2, hidden_size=32, num_heads=4, vocab_size=30522, seq_length=96,
                        add_lm_head=True, add_binary_head=True)  # heads the bi-encoder drops on load
    model = BertModel(cfg).initialize(11)
    save_full_model_state(path, gather_full_state(model), {"arch": "bert", "model": cfg.to_dict()})
    return str(path)


def overrides(run_dir, init, *extra: str) -> list[str]:
    """3 steps of 4 questions (each with its positive and one hard negative: the file's or BM25's),
    validation at the end. No dropout: every layout then computes the same function."""
    return [f"train.init_from={init}", f"data.path={FIXTURE}", "task.passages=psgs.tsv", "task.question_length=16",
            "task.passage_length=64", "train.steps=3", "train.epochs=0", "train.micro_batch=4", "train.global_batch=4",
            "train.lr=1e-3", "train.log_interval=1", "model.dropout=0.0", "model.attention_dropout=0.0",
            "log.progress=false", "log.plot=false", f"log.dir={run_dir}", *extra]


def rank_runs(init: str, root: str, runs: list) -> dict:
    """Rank function: the named runs in turn, each with its extra overrides."""
    from megazoo.core.train.trainer import train
    from megazoo.tasks.retrieval.stages import load_recipe

    out = {}
    for name, extra in runs:
        summary = train(load_recipe("retrieval-finetune", overrides(f"{root}/{name}", init, *extra)))
        out[name] = {"losses": summary["losses"], "valid": summary["valid"]}
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("retrieval")
    init = make_tiny_bert(root / "tiny")
    sep = "task.shared_towers=false"
    single = rank_runs(init, str(root), [("single", []), ("sep", [sep])])
    dp2 = spawn(rank_runs, 2, init, str(root), [("dp2", ["train.micro_batch=2"]),
                                                ("dp2-local", ["train.micro_batch=2", "task.global_negatives=false"]),
                                                ("tp2", ["parallel.tp=2"]), ("sep-dp2", ["train.micro_batch=2", sep]),
                                                ("sep-tp2", ["parallel.tp=2", sep])], timeout=600)
    return root, init, single, dp2


def test_global_negatives_make_dp2_equal_dp1(runs):
    _, _, singles, multi = runs
    single = singles["single"]
    ref = single["losses"]
    assert len(ref) == 3 and ref[-1] != ref[0]  # it trains
    for rank, got in enumerate(multi):
        diff = max(abs(a - b) for a, b in zip(got["dp2"]["losses"], ref))
        assert diff <= TOL, f"rank {rank}: dp=2 losses differ from dp=1 by {diff:.2e}"
        for key in ("loss", "top1_acc", "top5_acc", "avg_rank"):
            assert got["dp2"]["valid"][key] == pytest.approx(single["valid"][key], abs=TOL), key
        # the same run without the gather: each rank contrasts only its own passages
        local = got["dp2-local"]["losses"]
        assert abs(local[0] - ref[0]) > 1e-3, "without global negatives the loss should differ"


def test_tp2_equals_tp1(runs):
    _, _, singles, multi = runs
    single = singles["single"]
    for rank, got in enumerate(multi):
        diff = max(abs(a - b) for a, b in zip(got["tp2"]["losses"], single["losses"]))
        assert diff <= TOL, f"rank {rank}: tp=2 losses differ by {diff:.2e}"
        assert got["tp2"]["valid"]["top1_acc"] == single["valid"]["top1_acc"]


def test_separate_towers_keep_dp2_and_tp2_parity(runs):
    _, _, singles, multi = runs
    ref = singles["sep"]["losses"]
    # both towers start from the same encoder, so the first loss is the shared towers'; then they part
    assert ref[0] == pytest.approx(singles["single"]["losses"][0], abs=TOL)
    assert abs(ref[-1] - singles["single"]["losses"][-1]) > 1e-4
    for rank, got in enumerate(multi):
        for name in ("sep-dp2", "sep-tp2"):
            diff = max(abs(a - b) for a, b in zip(got[name]["losses"], ref))
            assert diff <= TOL, f"rank {rank}: {name} losses differ from one process by {diff:.2e}"
            assert got[name]["valid"]["avg_rank"] == pytest.approx(singles["sep"]["valid"]["avg_rank"], abs=TOL)


def test_checkpoint_indexes_and_evaluates(runs, capsys):
    root, _, _, _ = runs
    ckpt = root / "single" / "checkpoints"
    index = root / "index"
    assert megazoo(["task", "retrieval", "index", "--passages", str(FIXTURE / "psgs.tsv"), "--checkpoint", str(ckpt),
                    "--out", str(index)]) == 0
    meta = json.loads((index / "meta.json").read_text())
    assert meta["dim"] == 32 and meta["count"] == 12 and meta["passage_length"] == 64  # the run's own lengths
    # two ranks embed a strided share each: the same vectors in the same rows
    assert megazoo(["task", "retrieval", "index", "--passages", str(FIXTURE / "psgs.tsv"), "--checkpoint", str(ckpt),
                    "--out", str(root / "index2"), "--nproc", "2"]) == 0
    from megazoo.tasks.retrieval.index import load_index, stored_vectors

    (one, ids1, _), (two, ids2, _) = load_index(index), load_index(root / "index2")
    assert (ids1 == ids2).all() and abs(stored_vectors(one) - stored_vectors(two)).max() < 1e-5
    out = root / "eval.json"
    args = ["task", "retrieval", "evaluate", "--passages", str(FIXTURE / "psgs.tsv"), "--qas",
            str(FIXTURE / "nq-test.csv"), "--checkpoint", str(ckpt), "--top-k", "1,5,20"]
    assert megazoo(args + ["--index", str(index), "--out", str(out)]) == 0
    assert megazoo(args + ["--out", str(root / "noindex.json")]) == 0  # embedded and searched in memory
    a, b = json.loads(out.read_text()), json.loads((root / "noindex.json").read_text())
    assert a["task"] == "retrieval" and a["n"] == 9 and set(a["metrics"]) == {"top1", "top5", "top20"}
    assert a["metrics"] == b["metrics"]
    check_evaluation(out, "retrieval")
    preds = [json.loads(line) for line in (root / "eval.predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 9 and all(len(p["ids"]) == 12 for p in preds)
    # separate towers: the checkpoint holds both; questions go through the query tower
    from megazoo.tasks.retrieval.encoder import BiEncoder

    sep = root / "sep" / "checkpoints"
    enc = BiEncoder(sep)
    assert enc.separate and not BiEncoder(ckpt).separate
    texts = ["who wrote the novel", "when did it open"]
    q, p = enc.questions(texts), enc.encode_rows(enc.rows.questions(texts))
    assert abs(q - p).max() > 1e-4  # the towers were trained apart
    assert megazoo(args + ["--checkpoint", str(sep), "--out", str(root / "sep.json")]) == 0
    assert json.loads((root / "sep.json").read_text())["n"] == 9


def test_ict_pretraining_runs_on_sentence_blocks(tmp_path):
    from megazoo.tasks.retrieval.generate import write_ict_data

    docs = [(f"Topic {d}", [f"Sentence {i} of document {d} mentions item{d * 10 + i} and more words here."
                            for i in range(6)]) for d in range(12)]
    write_ict_data(tmp_path / "ict", docs)
    init = make_tiny_bert(tmp_path / "tiny")
    run = tmp_path / "ict-run"
    assert megazoo(["task", "retrieval", "train", "retrieval-ict", "--set", f"train.init_from={init}",
                    f"data.path={tmp_path / 'ict' / 'text'}", f"task.titles={tmp_path / 'ict' / 'titles'}",
                    "data.split=80,20,0", "task.passage_length=48", "task.question_length=16", "train.epochs=0",
                    "train.steps=2", "train.micro_batch=4", "train.global_batch=4", "log.progress=false",
                    "log.plot=false", f"data.cache_dir={tmp_path / 'cache'}", f"log.dir={run}"]) == 0
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    valid = [x for x in lines if x.get("split") == "valid"]
    assert valid and 0 <= valid[-1]["top1_acc"] <= 1 and valid[-1]["avg_rank"] >= 1


def reader_stage(stage: str, retriever, run_dir, *extra: str) -> dict:
    """The train stage on a reader recipe (reader, e2e, mss) on the fixture: 4 steps of 2 questions
    over their top-3 passages."""
    assert megazoo(["task", "retrieval", "train", f"retrieval-{stage}", "--set", f"task.retriever={retriever}",
                    f"train.init_from={retriever}", f"data.path={FIXTURE}", "task.passages=psgs.tsv",
                    "task.test_file=nq-test.csv", "task.top_k=3", "task.question_length=16", "task.reader_length=64",
                    "train.steps=4", "train.micro_batch=2", "train.global_batch=2", "train.lr=1e-3",
                    "task.refresh_steps=2", "log.progress=false", "log.plot=false", f"log.dir={run_dir}", *extra]) == 0
    return json.loads((Path(run_dir) / "reader.json").read_text())


def test_reader_on_fixed_retrieval_and_end_to_end(runs):
    import torch

    from megazoo.tasks.retrieval.encoder import BiEncoder

    root, _, _, _ = runs
    fixed = reader_stage("reader", root / "single" / "checkpoints", root / "reader")
    assert fixed["component"] == "reader" and fixed["n"] == 9 and fixed["refreshes"] == 0
    assert all(0 <= v <= 1 for v in fixed["metrics"].values())  # fractions (eval/metrics' scale)
    assert len(fixed["losses"]) == 4 and all(x >= 0 for x in fixed["losses"])  # 0: no answer in the step's passages
    assert (root / "reader" / "checkpoints").is_dir() and not (root / "reader" / "retriever").exists()
    check_evaluation(root / "reader" / "reader.json", "retrieval")
    preds = [json.loads(line) for line in (root / "reader" / "reader.predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 9 and all(len(p["ids"]) == 3 for p in preds)
    assert fixed["metrics"]["em"] == pytest.approx(sum(p["em"] for p in preds) / 9)
    # end to end on separate towers: the reader's signal moves the query tower, the index is refreshed
    sep = root / "sep" / "checkpoints"
    e2e = reader_stage("e2e", sep, root / "e2e")
    assert e2e["component"] == "e2e" and e2e["refreshes"] == 1
    assert set(e2e["metrics"]) >= {"em", "retrieval_top1", "retrieval_top5", "retrieval_top20"}
    before, after = BiEncoder(sep), BiEncoder(root / "e2e" / "retriever")  # both towers, written as a checkpoint
    assert after.separate and after.passage_length == 64
    q0, q1 = before.query_model.state_dict(), after.query_model.state_dict()
    assert max(float((q1[k] - q0[k]).abs().max()) for k in q0) > 1e-4, "the query tower did not move"
    c0, c1 = before.model.state_dict(), after.model.state_dict()
    assert all(torch.equal(c0[k], c1[k]) for k in c0)  # the context tower (the index) stays fixed
    # masked salient spans from that retriever: queries are masked sentences of training passages
    mss = reader_stage("mss", root / "e2e" / "retriever", root / "mss")
    assert mss["component"] == "mss" and (root / "mss" / "retriever").is_dir()
    # a two-tower folder starts a separate-towers run: each tower from its own prefix
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.tasks.retrieval.builder import build
    from megazoo.zoo.pretrained import read

    _, model = read(root / "mss" / "retriever")
    builder = build({"shared_towers": False, "question_length": 16, "passage_length": 64}, model)
    chunks = builder.chunks(ParallelContext.single(), 0)
    report = builder.load_weights(chunks, root / "mss" / "retriever", ParallelContext.single())
    assert not report["missing"]
    saved = BiEncoder(root / "mss" / "retriever")
    for tower, want in ((chunks[0].query, saved.query_model), (chunks[0].context, saved.model)):
        got, ref = tower.state_dict(), want.state_dict()
        assert all(torch.equal(got[k], ref[k]) for k in ref)


def test_dpr_questions_as_hugging_face_datasets_train_the_same(runs, tmp_path):
    """Issue #38: task.train_file / task.valid_file as save_to_disk folders of DPR's json columns (the
    same questions): the same losses and validation as from the json files."""
    import datasets

    root, init, singles, _ = runs
    for name in ("nq-train", "nq-dev"):
        items = json.loads((FIXTURE / f"{name}.json").read_text())
        datasets.Dataset.from_list(items).save_to_disk(str(tmp_path / name))
    got = rank_runs(init, str(tmp_path), [("hf", [f"task.train_file={tmp_path / 'nq-train'}",
                                                   f"task.valid_file={tmp_path / 'nq-dev'}"])])["hf"]
    assert got["losses"] == pytest.approx(singles["single"]["losses"], abs=1e-6)
    assert got["valid"] == pytest.approx(singles["single"]["valid"], abs=1e-6)
