"""RACE fine-tuning with a tiny random BERT: TP=2 and DP=2 give the TP=1 losses (fp32, 1e-5), and
the checkpoint chain (save, evaluate, ensemble) works through the command line."""

import json
from pathlib import Path

import pytest
import torch

from megazoo.cli import main as megazoo
from megazoo.core.parallel.launch import spawn
from megazoo.tasks.race.config import RaceConfig

FIXTURE = Path(__file__).parent / "fixtures" / "race" / "RACE"
TOL = 1e-5


def make_tiny_bert(path: Path) -> str:
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.bert import BertModel, megatron_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = megatron_bert(num_layers=2, hidden_size=32, num_heads=4, vocab_size=30522, seq_length=96,
                        add_lm_head=True, add_binary_head=True)  # heads RACE must drop on load
    model = BertModel(cfg).initialize(11)
    save_full_model_state(path, gather_full_state(model), {"arch": "bert", "model": cfg.to_dict()})
    return str(path)


def finetune(init: str, run_dir: str, tp: int = 1, head_dropout: float = 0.1):
    """Dropout in the head draws from the stream every tp rank shares, so TP=2 matches TP=1 with it
    on; data-parallel ranks mask different questions, so DP parity is checked with it off."""
    from megazoo.tasks.race.run import run_finetune

    cfg = RaceConfig.load("race", [f"model.init={init}", f"data.path={FIXTURE}", "data.max_seq_length=96",
                                   "data.max_qa_length=32", "model.dropout=0.0", "train.epochs=2",
                                   "train.micro_batch=1", "train.global_batch=2", "train.lr=1e-3",
                                   "train.warmup=0.25", f"parallel.tp={tp}", f"log.dir={run_dir}",
                                   f"model.head_dropout={head_dropout}"])
    summary = run_finetune(cfg, echo=False)
    return summary["losses"], summary["valid"], summary["checkpoint"]


def two_rank_cases(init: str, root: str):
    return {"tp2": finetune(init, f"{root}/tp2", tp=2), "dp2": finetune(init, f"{root}/dp2", tp=1, head_dropout=0.0)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("race")
    init = make_tiny_bert(root / "tiny")
    single = finetune(init, str(root / "tp1"))
    single_no_dropout = finetune(init, str(root / "tp1-nodrop"), head_dropout=0.0)
    multi = spawn(two_rank_cases, 2, init, str(root), timeout=300)
    return root, single, multi, single_no_dropout


def test_tp2_and_dp2_match_tp1(runs):
    _, single, multi, single_no_dropout = runs
    reference = {"tp2": single, "dp2": single_no_dropout}
    for losses, _, _ in reference.values():
        assert len(losses) == 4 and all(torch.isfinite(torch.tensor(losses)))
        assert losses[-1] != losses[0]  # it trains
    assert single[0] != single_no_dropout[0]  # the head dropout is really on
    for rank, per_rank in enumerate(multi):
        for layout, (got, got_valid, _) in per_rank.items():
            losses, valid, _ = reference[layout]
            diff = max(abs(a - b) for a, b in zip(got, losses))
            assert len(got) == len(losses) and diff <= TOL, f"{layout} rank {rank}: losses differ by {diff:.2e}"
            assert abs(got_valid["loss"] - valid["loss"]) <= TOL
            assert got_valid["accuracy"] == valid["accuracy"]


def test_checkpoints_hold_the_whole_model(runs):
    """Weights are compared through their predictions (below): Adam turns float noise in near-zero
    gradients (the head bias gets exactly zero: softmax ignores a shift) into lr-sized steps."""
    from megazoo.core.checkpoint import load_full_model_state

    root, (_, _, ckpt1), multi, _ = runs
    info, ref = load_full_model_state(ckpt1)
    _, tp2 = load_full_model_state(multi[0]["tp2"][2])
    _, init = load_full_model_state(root / "tiny")
    assert info["meta"]["task"] == "race" and info["meta"]["max_seq_length"] == 96
    assert {k: v.shape for k, v in ref.items()} == {k: v.shape for k, v in tp2.items()}
    assert "head_weight" in ref and not any(k.startswith(("bert.lm_", "bert.binary")) for k in ref)
    assert not torch.equal(ref["bert.layers.0.attn.qkv.weight"], init["layers.0.attn.qkv.weight"])


def test_evaluate_and_ensemble_commands(runs, capsys):
    root, (_, _, ckpt1), multi, _ = runs
    a, b = root / "pred_tp1.json", root / "pred_tp2.json"
    assert megazoo(["task", "race", "evaluate", "--data", str(FIXTURE), "--checkpoint", ckpt1, "--out", str(a)]) == 0
    assert megazoo(["task", "race", "evaluate", "--data", str(FIXTURE), "--checkpoint", multi[0]["tp2"][2],
                    "--out", str(b)]) == 0
    out = capsys.readouterr().out
    assert "accuracy: overall" in out and "middle" in out and "high" in out
    pa, pb = json.loads(a.read_text()), json.loads(b.read_text())
    assert pa["counts"] == {"overall": 4, "middle": 2, "high": 2}
    for ra, rb in zip(pa["predictions"], pb["predictions"]):
        assert ra["uid"] == rb["uid"] and max(abs(x - y) for x, y in zip(ra["probs"], rb["probs"])) < 1e-5
    ens = root / "ensemble.json"
    assert megazoo(["task", "race", "ensemble", str(a), str(b), "--out", str(ens)]) == 0
    e = json.loads(ens.read_text())
    avg = [(x + y) / 2 for x, y in zip(pa["predictions"][0]["probs"], pb["predictions"][0]["probs"])]
    assert e["predictions"][0]["probs"] == pytest.approx(avg, abs=1e-12)
    assert "ensemble of 2: accuracy: overall" in capsys.readouterr().out
    # a checkpoint that is not a RACE model is refused with a clear message
    assert megazoo(["task", "race", "evaluate", "--data", str(FIXTURE), "--checkpoint", str(root / "tiny")]) == 1
    assert "not a RACE checkpoint" in capsys.readouterr().err
