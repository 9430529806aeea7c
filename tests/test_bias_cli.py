"""`megazoo task bias evaluate|study|data` end to end on a tiny GPT-2 (an HF folder and the same
weights as a megazoo checkpoint), the evaluation in the shared shape (tests/evaluation_shape.py), and
the one-line errors of each bad input of the issue."""

import json
from pathlib import Path

import pytest
from sklearn.metrics import roc_auc_score

from megazoo.cli import main as megazoo
from megazoo.tasks.bias.generate import shipped_dir
from tests.evaluation_shape import check_evaluation
from tests.test_eval_leaderboard import _tiny_hf_gpt2

FIX = Path(__file__).parent / "fixtures" / "bias"
TEST = FIX / "SBIC.v2.tiny.csv"
SUPPORT = shipped_dir() / "SBIC.v2.trn.csv"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A random 2-layer GPT-2 as a Hugging Face folder, and imported as a megazoo checkpoint."""
    from transformers import AutoTokenizer

    from megazoo.zoo.hf import gather_full_state, import_hf
    from megazoo.zoo.io import save_model

    tmp = tmp_path_factory.mktemp("bias_models")
    hf = _tiny_hf_gpt2(tmp / "hf", seed=0)
    model = import_hf(str(hf))
    ckpt = save_model(tmp / "megazoo", "gpt", model.cfg, gather_full_state(model, model.ctx),
                      tokenizer=AutoTokenizer.from_pretrained(str(hf)))
    return hf, ckpt


def _read(out: Path):
    record = json.loads(out.read_text())
    preds = [json.loads(line) for line in out.with_suffix("").with_suffix(".predictions.jsonl").read_text().splitlines()]
    return record, preds


def test_evaluate_both_checkpoint_forms(models, tmp_path, capsys):
    hf, ckpt = models
    common = ["task", "bias", "evaluate", "--data", str(TEST), "--support", str(SUPPORT), "--shots", "2",
              "--dev", str(FIX / "SBIC.v2.agg.tiny.csv"), "--bootstrap", "100", "--batch", "3"]
    out = tmp_path / "hf" / "test.json"
    assert megazoo(common + ["--checkpoint", str(hf), "--out", str(out)]) == 0
    assert "offensive: AUC" in capsys.readouterr().out
    record, preds = _read(out)
    assert check_evaluation(out, "bias") == record and record["n"] == 4 and record["category"] == "offensive"
    assert {"auc", "accuracy", "f1", "precision", "recall", "f1_tuned"} <= set(record["metrics"])
    lo, hi = record["ci"]["auc"]
    assert lo <= record["metrics"]["auc"] <= hi and record["threshold"] is not None
    assert [(p["post"], p["label"]) for p in preds] == [("Nice day at the beach.", 0), ("You absolute clown.", 1),
                                                       ("Shut up, idiot.", 1), ("The bus was late\nagain.", 0)]
    assert all(0.0 <= p["score"] <= 1.0 for p in preds)
    assert record["metrics"]["auc"] == roc_auc_score([p["label"] for p in preds], [p["score"] for p in preds])
    cache = out.with_suffix("").with_suffix(".cache.jsonl")
    lines = cache.read_text()
    # a rerun (replacing the results: --overwrite) scores nothing new: the cache is continued, not replaced
    assert megazoo(common + ["--checkpoint", str(hf), "--out", str(out), "--overwrite"]) == 0
    assert cache.read_text() == lines and _read(out) == (record, preds)
    out2 = tmp_path / "megazoo" / "test.json"  # the same weights as a megazoo checkpoint score the same
    assert megazoo(common + ["--checkpoint", str(ckpt), "--out", str(out2), "--selection", "knn"]) == 0
    _, preds2 = _read(out2)
    assert all(abs(a["score"] - b["score"]) <= 1e-4 for a, b in zip(preds, preds2))


def test_study_writes_points_and_png(models, tmp_path, capsys):
    hf, _ = models
    out = tmp_path / "study.json"
    assert megazoo(["task", "bias", "study", "--data", str(TEST), "--support", str(SUPPORT), "--checkpoint", str(hf),
                    "--out", str(out), "--sizes", "4,all", "--shots", "2,4", "--selection", "random",
                    "--bootstrap", "50"]) == 0
    record = json.loads(out.read_text())
    assert [(p["size"], p["shots"]) for p in record["points"]] == [(4, 2), (4, 4), (64, 2), (64, 4)]
    assert 0.0 <= record["zero_shot"]["auc"] <= 1.0 and (tmp_path / "study.png").stat().st_size > 1000
    assert "size   64  k  4  AUC" in capsys.readouterr().out


def test_data_command(tmp_path, capsys):
    assert megazoo(["task", "bias", "data", str(tmp_path / "set")]) == 0
    assert "SBIC.v2.tst.csv: 68 posts (32 offensive)" in capsys.readouterr().out
    assert megazoo(["task", "bias", "generate", str(tmp_path / "set")]) == 2  # the old name of data
    err = capsys.readouterr().err
    assert "`generate` is now `data`" in err and "exists and is not empty" in err


def test_zero_shot_evaluation_has_the_shared_shape(models, tmp_path, capsys):
    hf, _ = models
    out = tmp_path / "zero.json"
    assert megazoo(["task", "bias", "evaluate", "--data", str(TEST), "--support", str(SUPPORT), "--shots", "0",
                    "--bootstrap", "20", "--checkpoint", str(hf), "--out", str(out)]) == 0
    record = check_evaluation(out, "bias")
    assert record["predictions"] == "zero.predictions.jsonl" and record["n"] == 4 and record["shots"] == 0
    _, preds = _read(out)
    assert record["metrics"]["auc"] == roc_auc_score([p["label"] for p in preds], [p["score"] for p in preds])


@pytest.mark.parametrize("data, support, shots, message", [
    (FIX / "no_post.csv", SUPPORT, "2", "no_post.csv:1: no `post` column"),
    (FIX / "bad_yn.csv", SUPPORT, "2", "bad_yn.csv:3: offensiveYN is 'yes', not a number (1.0, 0.5 or 0.0)"),
    (TEST, FIX / "one_class.csv", "2", "the support set has only negative posts (3); class-balanced exemplars "
                                       "need both classes"),
    (TEST, FIX / "SBIC.v2.tiny.csv", "6", "--shots 6 is larger than the support set (4 posts)"),
])
def test_bad_inputs_are_one_line(tmp_path, capsys, data, support, shots, message):
    ckpt = tmp_path / "ckpt"  # an output inside the checkpoint folder would be refused by the output policy
    ckpt.mkdir()
    code = megazoo(["task", "bias", "evaluate", "--data", str(data), "--support", str(support), "--shots", shots,
                    "--checkpoint", str(ckpt), "--out", str(tmp_path / "x.json")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("megazoo task bias evaluate: error: ") and message in err
    assert not (tmp_path / "x.json").exists()


def test_leaderboard_evaluation(models):
    from megazoo.tasks.bias.leaderboard import EVALUATION

    _, ckpt = models
    assert EVALUATION.name == "bias" and EVALUATION.headline == "auc" and EVALUATION.kinds == ("lm",)
    got = EVALUATION.run(str(ckpt), str(TEST), {"fewshot_path": str(SUPPORT), "shots": 2, "selection": "random"})
    assert got["n"] == 4 and set(EVALUATION.metrics) <= set(got) and 0.0 <= got["auc"] <= 1.0
    with pytest.raises(ValueError, match="needs `fewshot_path`"):
        EVALUATION.run(str(ckpt), str(TEST), {})


def test_evaluate_at_tp2_equals_one_process(models, tmp_path):
    _, ckpt = models
    common = ["task", "bias", "evaluate", "--data", str(TEST), "--support", str(SUPPORT), "--shots", "2",
              "--selection", "random", "--bootstrap", "50", "--checkpoint", str(ckpt)]
    assert megazoo(common + ["--out", str(tmp_path / "one.json")]) == 0
    assert megazoo(common + ["--out", str(tmp_path / "tp2.json"), "--tp", "2"]) == 0  # two local ranks
    (one, one_preds), (tp2, tp2_preds) = _read(tmp_path / "one.json"), _read(tmp_path / "tp2.json")
    assert tp2["layout"] == {"tp": 2, "pp": 1} and tp2["n"] == one["n"] == 4
    assert all(abs(a["score"] - b["score"]) <= 1e-5 for a, b in zip(one_preds, tp2_preds))
