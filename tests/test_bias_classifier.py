"""The paper's fine-tuned baseline (issue 40, point 7): `megazoo task bias train` fine-tunes a tiny
random BERT with the sequence head on the shipped SBIC-format support set through the core trainer,
`megazoo task bias evaluate` scores the test CSV with it and writes the prompts' record; the two
evaluations of one test CSV hold the same post ids in the same order, and the AUC is the shared
metric's over those rows; each bad input (a one-class or unlabelled CSV, an unknown category, a
missing file, a checkpoint of the wrong kind, options of the other method) is one line."""

import json
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from megazoo.cli import main as megazoo
from megazoo.eval.metrics import roc_auc
from megazoo.tasks.bias.data import load_posts, post_id
from megazoo.tasks.bias.generate import shipped_dir
from tests.evaluation_shape import check_evaluation
from tests.test_eval_leaderboard import _tiny_hf_gpt2

DATA = shipped_dir()
TEST = DATA / "SBIC.v2.tst.csv"
DEV = DATA / "SBIC.v2.dev.csv"
ONE_CLASS = Path(__file__).parent / "fixtures" / "bias" / "one_class.csv"


@pytest.fixture(scope="module", autouse=True)
def registered():
    """The trainer finds tasks through the "megazoo.tasks" entry points of the installed package;
    until the installed metadata lists `bias` (pyproject.toml, then a reinstall), list it here."""
    from megazoo.core.train import models

    found = models.available_tasks()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MEGAZOO_PEAK_TFLOPS", "1")  # no peak measurement (MFU only): a second saved per run
        if "bias" in found:
            yield
            return
        extra = {"bias": EntryPoint("bias", "megazoo.tasks.bias.builder:build", "megazoo.tasks")}
        mp.setattr(models, "available_tasks", lambda: {**found, **extra})
        yield


def make_tiny_bert(path: Path) -> str:
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.bert import BertModel
    from megazoo.zoo.bert.config import original_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = original_bert(num_layers=2, hidden_size=32, num_heads=4, vocab_size=30522, seq_length=64,
                        add_lm_head=True, add_binary_head=True)  # pretraining heads the task drops
    state = gather_full_state(BertModel(cfg).initialize(3))
    save_full_model_state(path, state, {"arch": "bert", "model": cfg.to_dict()})
    return str(path)


def overrides(run_dir, init, *extra: str) -> list[str]:
    """4 epochs of the 64 support posts, 8 per step, validation on dev every 4 steps, no dropout."""
    return [f"train.init_from={init}", f"data.path={DATA}", "task.max_seq_length=48", "train.epochs=4",
            "train.micro_batch=8", "train.global_batch=8", "train.lr=2e-3", "train.warmup_fraction=0.0",
            "train.log_interval=1", "train.eval_interval=4", "model.dropout=0.0", "model.attention_dropout=0.0",
            "log.progress=false", "log.plot=false", "checkpoint.resume=none", f"log.dir={run_dir}", *extra]


def read(out: Path) -> tuple[dict, list[dict]]:
    record = json.loads(out.read_text())
    preds = [json.loads(x) for x in (out.parent / record["predictions"]).read_text().splitlines()]
    return record, preds


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The fine-tune, its evaluation on test (with the dev threshold) and on dev, and a zero-shot
    prompt evaluation of the same test CSV by a tiny GPT-2."""
    root = tmp_path_factory.mktemp("bias_baseline")
    init = make_tiny_bert(root / "bert")
    assert megazoo(["task", "bias", "train", "bias-classifier", "--set", *overrides(root / "ft", init)]) == 0
    best = root / "ft" / "checkpoints" / "best"
    common = ["task", "bias", "evaluate", "--checkpoint", str(best), "--bootstrap", "200"]
    assert megazoo(common + ["--data", str(TEST), "--dev", str(DEV), "--out", str(root / "finetuned.json")]) == 0
    assert megazoo(common + ["--data", str(DEV), "--out", str(root / "finetuned-dev.json")]) == 0
    gpt = _tiny_hf_gpt2(root / "gpt", seed=0)
    assert megazoo(["task", "bias", "evaluate", "--data", str(TEST), "--support", str(DATA / "SBIC.v2.trn.csv"),
                    "--checkpoint", str(gpt), "--shots", "0", "--dev", str(DEV), "--bootstrap", "200",
                    "--out", str(root / "zero-shot.json")]) == 0
    return root


def test_trains_through_the_core_trainer(run):
    lines = [json.loads(x) for x in (run / "ft" / "metrics.jsonl").read_text().splitlines()]
    train = [x for x in lines if "split" not in x]
    valid = [x for x in lines if x.get("split") == "valid"]
    assert len(train) == 32  # 4 epochs x 64 posts / 8
    assert {"auc", "accuracy", "f1"} <= set(valid[-1])
    first, last = sum(x["loss"] for x in train[:8]) / 8, sum(x["loss"] for x in train[-8:]) / 8
    assert last < first  # the classifier fits its support set
    config = (run / "ft" / "config.yaml").read_text()
    assert "name: bias" in config and "best_metric: auc" in config


def test_evaluation_is_the_prompts_record_on_the_same_posts(run):
    ft, ft_preds = read(run / "finetuned.json")
    zs, zs_preds = read(run / "zero-shot.json")
    assert check_evaluation(run / "finetuned.json", "bias") == ft
    assert ft["method"] == "fine-tuned" and zs["method"] == "prompts"
    assert set(ft["metrics"]) == set(zs["metrics"]) and ft["n"] == zs["n"] == len(load_posts(TEST))
    ids = [p["id"] for p in ft_preds]
    assert ids == [p["id"] for p in zs_preds] == [post_id(p.text) for p in load_posts(TEST)]
    assert len(set(ids)) == len(ids)
    assert [p["label"] for p in ft_preds] == [p["label"] for p in zs_preds]
    labels, scores = [p["label"] for p in ft_preds], [p["score"] for p in ft_preds]
    assert ft["metrics"]["auc"] == roc_auc(scores, labels)
    lo, hi = ft["ci"]["auc"]
    assert lo <= ft["metrics"]["auc"] <= hi and ft["threshold"] is not None
    assert all(0.0 <= s <= 1.0 for s in scores) and len(set(scores)) > 1


def test_evaluate_equals_the_validation_of_the_best_checkpoint(run):
    """The evaluate stage scores dev as the trainer validated it (same inputs, same weights)."""
    record, _ = read(run / "finetuned-dev.json")
    valid = [json.loads(x) for x in (run / "ft" / "metrics.jsonl").read_text().splitlines()]
    best = max((x for x in valid if x.get("split") == "valid"), key=lambda x: x["auc"])
    assert record["metrics"]["auc"] == pytest.approx(best["auc"], abs=1e-12)
    assert record["metrics"]["accuracy"] == pytest.approx(best["accuracy"], abs=1e-12)


def one_line_error(args: list[str], capsys, prog: str) -> str:
    assert megazoo(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"megazoo task bias {prog}: error:") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_bad_inputs_are_one_line(run, tmp_path, capsys):
    init = str(run / "bert")
    train = ["task", "bias", "train", "bias-classifier", "--set"]
    err = one_line_error(train + overrides(tmp_path / "a", init, f"task.support={ONE_CLASS}"), capsys, "train")
    assert f"{ONE_CLASS}: all 3 posts are negative for offensive; training a classifier needs both classes" in err
    err = one_line_error(train + overrides(tmp_path / "b", init, "task.category=rude"), capsys, "train")
    assert "task.category='rude' is not a bias category" in err
    err = one_line_error(train + overrides(tmp_path / "c", init, "task.dev=nope.csv"), capsys, "train")
    assert "task.dev='nope.csv': no such file" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()

    best = str(run / "ft" / "checkpoints" / "best")
    evaluate = ["task", "bias", "evaluate", "--data", str(TEST), "--out", str(tmp_path / "e.json")]
    err = one_line_error(evaluate + ["--checkpoint", best, "--support", str(TEST)], capsys, "evaluate")
    assert "is a fine-tuned classifier, trained on its recipe's support set; leave --support out" in err
    err = one_line_error(evaluate + ["--checkpoint", best, "--category", "lewd"], capsys, "evaluate")
    assert "was fine-tuned for 'offensive'; give --category offensive" in err
    err = one_line_error(evaluate + ["--checkpoint", str(run / "gpt")], capsys, "evaluate")
    assert "--support is required with a decoder checkpoint" in err
    assert not (tmp_path / "e.json").exists()


def test_missing_label_column_and_wrong_kind_of_checkpoint_are_one_line(run, tmp_path, capsys):
    """A CSV without the category's label column, for training or for evaluation; a checkpoint of
    the wrong kind at each stage: a decoder to start the classifier from, a BERT that is no bias
    classifier to evaluate, the classifier given to the prompts' study."""
    nolabel = tmp_path / "nolabel.csv"
    nolabel.write_text("whoTarget,intentYN,sexYN,WorkerId,HITId,post,dataSource\n,0.0,0.0,w1,h1,Nice day.,t\n")
    bert, gpt, best = str(run / "bert"), str(run / "gpt"), str(run / "ft" / "checkpoints" / "best")
    train = ["task", "bias", "train", "bias-classifier", "--set"]
    err = one_line_error(train + overrides(tmp_path / "a", bert, f"task.support={nolabel}"), capsys, "train")
    assert f"{nolabel}:1: no `offensiveYN` column for the offensive category" in err
    err = one_line_error(train + overrides(tmp_path / "b", gpt), capsys, "train")
    assert "task bias fine-tunes a BERT encoder, got model.arch='gpt'" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()

    out = ["--out", str(tmp_path / "e.json")]
    err = one_line_error(["task", "bias", "evaluate", "--data", str(nolabel), "--checkpoint", best, *out], capsys,
                         "evaluate")
    assert f"{nolabel}:1: no `offensiveYN` column for the offensive category" in err
    prompts = ["--data", str(TEST), "--support", str(DATA / "SBIC.v2.trn.csv"), "--shots", "0"]
    err = one_line_error(["task", "bias", "evaluate", *prompts, "--checkpoint", bert, *out], capsys, "evaluate")
    assert "needs a decoder (gpt or llama), this checkpoint is 'bert'" in err
    err = one_line_error(["task", "bias", "study", *prompts[:4], "--checkpoint", best, "--sizes", "8",
                          "--shots", "2", *out], capsys, "study")
    assert f"--checkpoint {best}: a fine-tuned bias classifier; the study varies the prompts' support set" in err
    assert not (tmp_path / "e.json").exists()
