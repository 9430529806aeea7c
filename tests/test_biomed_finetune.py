"""biomed on the core trainer with a tiny random BERT (post-LN, so it exports to Hugging Face's
Bert* classes): `megazoo task biomed train` for ner, re and qa in one process, the same runs at
tp2 equal to it (fp32, 1e-5; one 2-rank spawn runs all three heads), the evaluate stage (its two
files in the issue's formats, metrics equal to the in-training validation), NER and QA exports
that give the same predictions in transformers, the leaderboard entries, and one-line errors."""

import json
import os
from pathlib import Path

import pytest
import torch

from megazoo.cli import main as megazoo
from megazoo.core.parallel.launch import spawn
from tests.evaluation_shape import check_evaluation

os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")

FIXTURES = Path(__file__).parent / "fixtures" / "biomed"
DATA = {"ner": FIXTURES / "ner", "re": FIXTURES / "chemprot", "qa": FIXTURES / "bioasq"}
TEST = {"ner": "test.tsv", "re": "test.tsv", "qa": "test.json"}
TOL = 1e-5


def make_tiny_bert(path: Path) -> str:
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.bert import BertModel
    from megazoo.zoo.bert.config import original_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = original_bert(num_layers=2, hidden_size=32, num_heads=4, vocab_size=30522, seq_length=96,
                        add_lm_head=True, add_binary_head=True)  # pretraining heads the tasks drop
    save_full_model_state(path, gather_full_state(BertModel(cfg).initialize(5)), {"arch": "bert", "model": cfg.to_dict()})
    return str(path)


def overrides(kind: str, run_dir, init, *extra: str) -> list[str]:
    """2 epochs, 2 micro-batches of 2 per step, validation every step, no dropout (the layouts
    then agree). QA: 32 positions with a stride of 8, so contexts take several windows."""
    seq = ["task.max_seq_length=32", "task.doc_stride=8", "task.max_query_length=12"] if kind == "qa" \
        else ["task.max_seq_length=64"]
    return [f"train.init_from={init}", f"data.path={DATA[kind]}", *seq, "train.epochs=2", "train.micro_batch=2",
            "train.global_batch=4", "train.lr=1e-3", "train.log_interval=1", "train.eval_interval=1",
            "model.dropout=0.0", "model.attention_dropout=0.0", "log.progress=false", "log.plot=false",
            "checkpoint.resume=none", f"log.dir={run_dir}", *extra]


def metrics(run_dir) -> list[dict]:
    return [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]


def tp2_runs(init: str, root: str) -> dict:
    """Rank function: the three kinds at tp=2 (the recipes loaded as the stage loads them)."""
    from megazoo.core.train.trainer import train
    from megazoo.tasks.biomed.cli import STAGES

    out = {}
    for kind in DATA:
        cfg = STAGES["train"].load(f"biomed-{kind}", overrides(kind, f"{root}/tp2-{kind}", init, "parallel.tp=2",
                                                             "checkpoint.save=false"))
        summary = train(cfg)
        out[kind] = {"losses": summary["losses"], "valid": summary["valid"]}
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("biomed")
    init = make_tiny_bert(root / "tiny")
    for kind in DATA:
        assert megazoo(["task", "biomed", "train", f"biomed-{kind}", "--set",
                        *overrides(kind, root / kind, init)]) == 0
    multi = spawn(tp2_runs, 2, init, str(root), timeout=300)
    return root, init, multi


def test_each_head_at_tp2_equals_one_process(runs):
    root, _, multi = runs
    for kind in DATA:
        lines = metrics(root / kind)
        ref = [r["loss"] for r in lines if r.get("split") != "valid"]
        valid = [r for r in lines if r.get("split") == "valid"][-1]
        assert len(ref) >= 2 and ref[-1] != ref[0], kind  # it trains
        for rank, per_rank in enumerate(multi):
            got = per_rank[kind]
            diff = max(abs(a - b) for a, b in zip(got["losses"], ref))
            assert len(got["losses"]) == len(ref) and diff <= TOL, f"{kind} rank {rank}: losses differ by {diff:.2e}"
            assert abs(got["valid"]["loss"] - valid["loss"]) <= TOL
            names = ("strict_accuracy", "lenient_accuracy", "mrr") if kind == "qa" else ("precision", "recall", "f1")
            for key in names:
                assert got["valid"][key] == pytest.approx(valid[key], abs=1e-12), (kind, key)


def test_metric_lines_and_checkpoint_meta(runs):
    from megazoo.core.checkpoint import load_full_model_state

    root, _, _ = runs
    for kind, keys in (("ner", {"precision", "recall", "f1"}), ("re", {"precision", "recall", "f1"}),
                       ("qa", {"strict_accuracy", "lenient_accuracy", "mrr"})):
        valid = [r for r in metrics(root / kind) if r.get("split") == "valid"]
        assert valid and all(keys <= set(r) for r in valid)
        info, state = load_full_model_state(root / kind / "checkpoints")
        assert info["meta"]["task"]["name"] == "biomed" and info["meta"]["task"]["kind"] == kind
        assert "task_head.classifier.weight" in state and not any(k.startswith(("lm_", "binary_head")) for k in state)
        assert any(k.startswith("pooler.") for k in state) == (kind == "re")  # HF's token/QA classes have no pooler
        best = json.loads((root / kind / "checkpoints" / "best" / "best.json").read_text())
        assert best["metric"] == ("strict_accuracy" if kind == "qa" else "f1")


def evaluate(kind: str, data, ckpt, out) -> dict:
    assert megazoo(["task", "biomed", "evaluate", "--kind", kind, "--data", str(data), "--checkpoint", str(ckpt),
                    "--out", str(out)]) == 0
    return json.loads(Path(out).read_text())


def test_evaluate_files_and_the_in_training_validation(runs, tmp_path):
    root, _, _ = runs
    for kind, dev in (("ner", "devel.tsv"), ("re", "dev.tsv"), ("qa", "dev.json")):
        summary = evaluate(kind, DATA[kind] / dev, root / kind / "checkpoints", tmp_path / f"{kind}.json")
        assert check_evaluation(tmp_path / f"{kind}.json", "biomed") == summary and summary["kind"] == kind
        last = [r for r in metrics(root / kind) if r.get("split") == "valid"][-1]  # the weights of the last step
        assert summary["metrics"] == {k: last[k] for k in summary["metrics"]}
        pred = tmp_path / summary["predictions"]
        if kind == "ner":
            assert summary["n"] == 2 and pred.name == "ner.predictions.txt"
            blocks = pred.read_text().strip().split("\n\n")
            assert [len(b.split("\n")) for b in blocks] == [7, 4]
            assert blocks[0].split("\n")[0].split(" ")[:2] == ["Chronic", "B"]
        elif kind == "re":
            assert summary["n"] == 3 and pred.name == "re.predictions.tsv"
            rows = [line.split("\t") for line in pred.read_text().splitlines()]
            assert [r[:2] for r in rows] == [["11000001.T1.T2", "CPR:4"], ["11000001.T1.T3", "false"],
                                             ["11000002.T2.T3", "CPR:3"]]
        else:
            rows = json.loads(pred.read_text())
            assert [r["id"] for r in rows] == ["5d01_001", "5d01_002"] and rows[0]["gold"] == ["HTT", "huntingtin"]
            assert all(r["answers"] and r["scores"] == sorted(r["scores"], reverse=True) for r in rows)


def hf_predictions(kind: str, folder, examples, enc):
    """Logits rows of the exported model in transformers, cut to each row's real length."""
    from transformers import AutoModelForQuestionAnswering, AutoModelForTokenClassification

    cls = AutoModelForTokenClassification if kind == "ner" else AutoModelForQuestionAnswering
    model = cls.from_pretrained(folder).eval()
    assert type(model).__name__ == ("BertForTokenClassification" if kind == "ner" else "BertForQuestionAnswering")
    with torch.no_grad():
        out = model(input_ids=enc.input_ids, token_type_ids=enc.token_type_ids, attention_mask=enc.attention_mask)
    lens = enc.attention_mask.sum(-1).tolist()
    if kind == "ner":
        return [out.logits[i, :n] for i, n in enumerate(lens)]
    return [torch.stack([out.start_logits[i, :n], out.end_logits[i, :n]], -1) for i, n in enumerate(lens)]


@pytest.mark.parametrize("kind", ["ner", "qa"])
def test_export_to_hf_gives_the_same_predictions(runs, tmp_path, kind):
    from megazoo.eval.taskkit import open_task_model
    from megazoo.tasks.biomed.inputs import decode_ner
    from megazoo.zoo.heads.qa import decode_qa

    root, _, _ = runs
    ckpt = root / kind / "checkpoints"
    assert megazoo(["export-hf", str(ckpt), str(tmp_path / "hf")]) == 0
    model = open_task_model(ckpt, "biomed", kind)
    builder, chunks, ctx, tok = model.builder, model.chunks, model.ctx, model.tokenizer
    examples = builder.read(DATA[kind] / TEST[kind], "test")
    enc = builder.encode(examples, tok)
    ours = builder.logits(chunks, ctx, enc)
    theirs = hf_predictions(kind, tmp_path / "hf", examples, enc)
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, atol=TOL), (a - b).abs().max()
    s = builder.settings
    if kind == "ner":
        assert decode_ner(theirs, enc, examples, s.labels) == builder.predict(chunks, ctx, examples, enc)
    else:
        hf = decode_qa([r[:, 0] for r in theirs], [r[:, 1] for r in theirs], enc, examples, s.n_best,
                       s.max_answer_length)
        mine = builder.predict(chunks, ctx, examples, enc)
        assert [[a["text"] for a in x] for x in hf] == [[a["text"] for a in x] for x in mine]


def test_leaderboard_scores_each_kind_on_its_checkpoints(runs, tmp_path, monkeypatch):
    import yaml

    import megazoo.eval.registry as registry
    from megazoo.eval.leaderboard import run_leaderboard
    from megazoo.tasks.biomed import leaderboard

    root, _, _ = runs
    evs = {ev.name: ev for ev in (leaderboard.NER, leaderboard.RE, leaderboard.QA)}
    monkeypatch.setattr(registry, "evaluations", lambda: evs)
    assert registry.model_kind({"checkpoint": str(root / "ner" / "checkpoints")}) == "biomed-ner"
    suite = {"name": "biomed", "out": str(tmp_path / "board"),
             "models": [{"name": k, "checkpoint": str(root / k / "checkpoints")} for k in DATA],
             "tasks": [{"name": f"biomed-{k}", "path": str(DATA[k] / TEST[k])} for k in DATA]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    results = run_leaderboard(tmp_path / "suite.yaml", progress=False)["results"]
    for kind in DATA:
        direct = evaluate(kind, DATA[kind] / TEST[kind], root / kind / "checkpoints", tmp_path / f"{kind}.json")
        assert set(results[kind]) == {f"biomed-{kind}"}  # each model is scored on its own kind only
        assert results[kind][f"biomed-{kind}"] == {**direct["metrics"], "n": direct["n"]}


def test_cli_errors_are_one_line(runs, tmp_path, capsys):
    root, init, _ = runs

    def fails(*args: str, code: int = 2) -> str:
        assert megazoo(list(args)) == code
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        return err

    err = fails("task", "biomed", "evaluate", "--kind", "re", "--data", str(DATA["ner"] / "test.tsv"),
                "--checkpoint", str(root / "ner" / "checkpoints"), "--out", str(tmp_path / "x.json"))
    assert "a biomed 'ner' checkpoint, this stage needs a 're' one" in err and not (tmp_path / "x.json").exists()
    err = fails("task", "biomed", "evaluate", "--kind", "ner", "--data", str(DATA["ner"] / "test.tsv"),
                "--checkpoint", init, "--out", str(tmp_path / "x.json"))
    assert "not a biomed checkpoint" in err
    bad = tmp_path / "ner"
    bad.mkdir()
    (bad / "train.tsv").write_text("Naloxone\tB\nreverses O\n")
    (bad / "devel.tsv").write_text("a\tO\n")
    err = fails("task", "biomed", "train", "biomed-ner", "--set", *overrides("ner", tmp_path / "run", init),
                f"data.path={bad}")
    assert f"{bad / 'train.tsv'}:2: no tab" in err and not (tmp_path / "run").exists()
    (bad / "train.tsv").write_text("Naloxone\tB-Chemical\n")
    err = fails("task", "biomed", "train", "biomed-ner", "--set", *overrides("ner", tmp_path / "run", init),
                f"data.path={bad}")
    assert f"{bad / 'train.tsv'}:1: label 'B-Chemical' is not one of task.labels" in err
    assert "task.kind must be one of ner, re, qa" in fails("task", "biomed", "train", "biomed-ner", "--set",
                                                          "task.kind=pos", f"train.init_from={init}")
    assert "this stage trains biomed" in fails("task", "biomed", "train", "race")
    assert "did you mean `task.doc_stride`" in fails("task", "biomed", "train", "biomed-qa", "--set",
                                                    "task.doc_strid=3", f"train.init_from={init}")


def test_qa_starts_from_a_squad_fine_tune(runs, tmp_path, capsys):
    """BioBERT's order: a QA model fine-tuned on a SQuAD-format set first (here the fixture run)
    is the train.init_from of the BioASQ fine-tune; its span head is taken over, nothing is new."""
    root, _, _ = runs
    capsys.readouterr()
    assert megazoo(["task", "biomed", "train", "biomed-qa", "--set",
                    *overrides("qa", tmp_path / "bioasq", root / "qa" / "checkpoints", "train.epochs=1")]) == 0
    err = capsys.readouterr().err
    assert f"initialised from {root / 'qa' / 'checkpoints'}" in err and "new (freshly initialised)" not in err
