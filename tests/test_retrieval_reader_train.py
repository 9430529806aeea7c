"""The reader stages on the core trainer (reader/builder.py) with a tiny retriever fine-tuned on the
fixture: end to end (query tower trained, the questions re-retrieved every 2 steps through the
trainer's before_step hook) at dp=2 and tp=2 equals one process; a run stopped at step 2 and
resumed with train.steps raised to 4 continues exactly as the straight 4-step run (a constant
learning rate, so the longer schedule does not change the first steps), and a finished run started
again retrieves and evaluates without a step; task.retriever_lr_scale=0 keeps the query tower as
it was. Fixed retrieval and mss run through the CLI in test_retrieval_train.py."""

import json
import os
from pathlib import Path

import pytest

from megazoo.core.parallel.launch import spawn

os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")

FIXTURE = Path(__file__).parent / "fixtures" / "retrieval"
TOL = 1e-5


def reader_cfg(stage: str, retriever, run_dir, *extra: str):
    from megazoo.tasks.retrieval.stages import load_recipe

    return load_recipe(f"retrieval-{stage}", [
        f"task.retriever={retriever}", f"train.init_from={retriever}", f"data.path={FIXTURE}", "task.passages=psgs.tsv",
        "task.test_file=nq-test.csv", "task.top_k=3", "task.question_length=16", "task.reader_length=64",
        "task.refresh_steps=2", "train.steps=4", "train.micro_batch=2", "train.global_batch=2", "train.lr=1e-3",
        "train.warmup=0", "train.decay=constant", "model.dropout=0.0", "model.attention_dropout=0.0", "log.progress=false", "log.plot=false",
        f"log.dir={run_dir}", *extra])


def rank_runs(retriever: str, root: str, runs: list) -> dict:
    from megazoo.tasks.retrieval.reader.train import train_reader

    return {name: train_reader(reader_cfg("e2e", retriever, f"{root}/{name}", *extra)) for name, extra in runs}


@pytest.fixture(scope="module")
def retriever(tmp_path_factory):
    from megazoo.core.train.trainer import train
    from megazoo.tasks.retrieval.stages import load_recipe
    from tests.test_retrieval_train import make_tiny_bert, overrides

    root = tmp_path_factory.mktemp("reader")
    init = make_tiny_bert(root / "tiny")
    train(load_recipe("retrieval-finetune", overrides(str(root / "retriever"), init, "log.progress=false")))
    return root, str(root / "retriever" / "checkpoints")


@pytest.fixture(scope="module")
def e2e_runs(retriever):
    root, ckpt = retriever
    single = rank_runs(ckpt, str(root), [("single", [])])["single"]
    multi = spawn(rank_runs, 2, ckpt, str(root), [("dp2", ["train.micro_batch=1"]), ("tp2", ["parallel.tp=2"])],
                  timeout=600)
    return single, multi


def test_end_to_end_at_dp2_and_tp2_equals_one_process(e2e_runs):
    single, multi = e2e_runs
    ref = single["losses"]
    assert len(ref) == 4 and single["refreshes"] == 1 and ref[-1] != ref[0]
    for rank, got in enumerate(multi):
        for name in ("dp2", "tp2"):
            diff = max(abs(a - b) for a, b in zip(got[name]["losses"], ref))
            assert diff <= TOL, f"rank {rank}: {name} losses differ from one process by {diff:.2e}"
            assert got[name]["valid_loss"] == pytest.approx(single["valid_loss"], abs=TOL)
            assert got[name]["metrics"] == pytest.approx(single["metrics"], abs=1e-9), name


def test_resume_with_more_steps_continues_the_run(retriever, e2e_runs):
    from megazoo.tasks.retrieval.reader.train import train_reader

    root, ckpt = retriever
    single, _ = e2e_runs
    run = root / "resumed"
    first = train_reader(reader_cfg("e2e", ckpt, run, "train.steps=2"))
    assert first["losses"] == pytest.approx(single["losses"][:2], abs=1e-6)
    more = train_reader(reader_cfg("e2e", ckpt, run, "train.steps=4"))  # checkpoint.resume=auto: from step 2
    assert more["steps"] == 4  # the checkpoint carries the first two losses
    assert more["losses"] == pytest.approx(single["losses"], abs=1e-6)
    assert more["metrics"] == pytest.approx(single["metrics"], abs=1e-9)
    log = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in log if "loss" in x and x.get("split") != "valid"] == [2, 4]  # log_interval 10: the ends
    assert (run / "retriever").is_dir() and (run / "reader.predictions.jsonl").is_file()
    again = train_reader(reader_cfg("e2e", ckpt, run, "train.steps=4"))  # nothing left: retrieve, evaluate
    assert again["steps"] == 4 and again["metrics"] == pytest.approx(single["metrics"], abs=1e-9)


@pytest.mark.parametrize("stage", ["reader", "e2e"])
def test_missing_retriever_is_one_line(retriever, stage, capsys):
    from megazoo.cli import main as megazoo

    root, ckpt = retriever
    assert megazoo(["task", "retrieval", "train", f"retrieval-{stage}", "--set", f"task.retriever={root / 'none'}",
                    f"train.init_from={ckpt}", f"data.path={FIXTURE}", "task.passages=psgs.tsv",
                    "task.test_file=nq-test.csv", "task.reader_length=64", f"log.dir={root / ('bad-' + stage)}",
                    "log.progress=false"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "task.retriever" in err[0] and "none" in err[0]


def test_retriever_lr_scale_zero_keeps_the_query_tower(retriever, e2e_runs):
    """task.retriever_lr_scale scales the query tower's rate (core/optim: a parameter's lr_scale):
    at 0 the saved query tower is the retriever's own, bit for bit, while the reader trains."""
    import torch

    from megazoo.tasks.retrieval.reader.train import train_reader
    from megazoo.tasks.retrieval.towers import tower_state
    from megazoo.zoo.pretrained import read_full

    root, ckpt = retriever
    single, _ = e2e_runs
    run = train_reader(reader_cfg("e2e", ckpt, root / "query-frozen", "task.retriever_lr_scale=0"))
    assert run["losses"][0] == pytest.approx(single["losses"][0], abs=1e-6)  # the same first step
    assert run["losses"][-1] != pytest.approx(single["losses"][-1], abs=1e-6)  # then no query-tower update
    before = tower_state(read_full(ckpt)[2], "query")
    after = tower_state(read_full(run["retriever_out"])[2], "query")
    assert before.keys() == after.keys() and before
    for name, value in before.items():
        assert torch.equal(value.float(), after[name].float()), name


def test_end_to_end_from_a_store_its_vectors_and_index_equals_the_tsv(retriever, e2e_runs):
    """Issue #38: the evidence read by row from a passage store, its context vectors from an embedding
    folder (2 ranks, shards) and its Flat index from those shards: the same run as from the .tsv."""
    from megazoo.tasks.retrieval.embed import embed_store
    from megazoo.tasks.retrieval.index_build import build_from_vectors
    from megazoo.tasks.retrieval.reader.train import train_reader
    from megazoo.tasks.retrieval.store import build_store, open_store

    root, ckpt = retriever
    single, _ = e2e_runs
    build_store(FIXTURE / "psgs.tsv", root / "store", progress=False)
    embed_store(root / "store", ckpt, root / "vec", nproc=2, shard_size=5, progress=False)
    build_from_vectors(root / "vec", root / "index", "flat", store=open_store(root / "store"), progress=False)
    got = train_reader(reader_cfg("e2e", ckpt, root / "from-store", f"task.passages={root / 'store'}",
                                  f"task.vectors={root / 'vec'}", f"task.index={root / 'index'}"))
    assert max(abs(a - b) for a, b in zip(got["losses"], single["losses"])) <= TOL
    assert got["metrics"] == pytest.approx(single["metrics"], abs=1e-9)
    # vectors of another store are refused with one line naming the setting
    from megazoo.core.train.config import ConfigError

    (root / "other.tsv").write_text((FIXTURE / "psgs.tsv").read_text() + "9999\tOne passage more.\tMore\n")
    with pytest.raises(ConfigError, match="task.vectors=.*embedded from another passage store"):
        train_reader(reader_cfg("e2e", ckpt, root / "other-run", f"task.passages={root / 'other.tsv'}",
                                f"task.vectors={root / 'vec'}"))
