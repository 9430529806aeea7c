"""synthetic_qa models on the core trainer with tiny random models: the span head's training at
tp2 equals one process (fp32, 1e-5); the evaluate stage's file (the shared evaluation shape) and its
predictions FILE.predictions.json (scored again by the score stage to the same numbers); an exported
QA model answers the same in transformers (BertForQuestionAnswering); the answers, sample (and its
old name, questions) and filter stages on tiny checkpoints (the files they write, the counts adding
up); the leaderboard entry."""

import json
import os
from pathlib import Path

import pytest
import torch

from megazoo.cli import main as megazoo
from megazoo.core.parallel.launch import spawn
from megazoo.tasks.synthetic_qa.builder import DEV
from megazoo.tasks.synthetic_qa.squad import read_squad, write_squad

os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")
TOL = 1e-5


def make_tiny_bert(path: Path) -> str:
    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.zoo.bert import BertModel
    from megazoo.zoo.bert.config import original_bert
    from megazoo.zoo.hf import gather_full_state

    cfg = original_bert(num_layers=2, hidden_size=32, num_heads=4, vocab_size=30522, seq_length=64,
                        add_lm_head=True, add_binary_head=True)
    state = gather_full_state(BertModel(cfg).initialize(5))
    save_full_model_state(path, state, {"arch": "bert", "model": cfg.to_dict()})
    return str(path)


def overrides(run_dir, init, data, valid, *extra):
    """3 steps of 2 micro-batches of 2; 32 positions with a stride of 8, so contexts take several windows."""
    return [f"train.init_from={init}", f"data.path={data}", f"task.valid_file={valid}", "task.max_seq_length=32",
            "task.doc_stride=8", "task.max_query_length=12", "train.steps=3", "train.micro_batch=2",
            "train.global_batch=4", "train.lr=1e-3", "train.log_interval=1", "train.eval_interval=1",
            "model.dropout=0.0", "model.attention_dropout=0.0", "log.progress=false", "log.plot=false",
            "checkpoint.resume=none", f"log.dir={run_dir}", *extra]


def lines(run_dir):
    return [json.loads(x) for x in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]


def tp2_run(init, data, valid, root):
    from megazoo.core.train.trainer import train
    from megazoo.tasks.synthetic_qa.cli import STAGES

    cfg = STAGES["train"].load("synthetic_qa", overrides(f"{root}/tp2", init, data, valid, "parallel.tp=2",
                                                "checkpoint.save=false"))
    s = train(cfg)
    return {"losses": s["losses"], "valid": s["valid"]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("sqa")
    init = make_tiny_bert(root / "tiny")
    dev = read_squad(DEV)
    keep = [q for q in dev.questions if q.paragraph < 3]
    write_squad(root / "train.json", dev.paragraphs[:3], keep)
    write_squad(root / "valid.json", dev.paragraphs[:2], [q for q in keep if q.paragraph < 2])
    data, valid = root / "train.json", root / "valid.json"
    for kind in ("qa", "answers"):
        recipe = "synthetic_qa" if kind == "qa" else "synthetic_qa-answers"
        assert megazoo(["task", "synthetic_qa", "train", recipe, "--set",
                        *overrides(root / kind, init, data, valid)]) == 0
    multi = spawn(tp2_run, 2, init, str(data), str(valid), str(root), timeout=300)
    return root, multi


def test_span_head_at_tp2_equals_one_process(runs):
    root, multi = runs
    ref = [r["loss"] for r in lines(root / "qa") if r.get("split") != "valid"]
    valid = [r for r in lines(root / "qa") if r.get("split") == "valid"][-1]
    assert len(ref) == 3 and ref[-1] != ref[0] and {"exact_match", "f1"} <= set(valid)
    for got in multi:
        assert max(abs(a - b) for a, b in zip(got["losses"], ref)) <= TOL
        assert abs(got["valid"]["loss"] - valid["loss"]) <= TOL
        assert got["valid"]["f1"] == pytest.approx(valid["f1"], abs=1e-12)
    answers = [r for r in lines(root / "answers") if r.get("split") == "valid"][-1]
    assert {"answer_recall", "answer_f1"} <= set(answers)


def test_evaluate_and_score_agree(runs, tmp_path):
    from tests.evaluation_shape import check_evaluation

    root, _ = runs
    out, pred = tmp_path / "eval.json", tmp_path / "eval.predictions.json"
    assert megazoo(["task", "synthetic_qa", "evaluate", "--data", str(root / "valid.json"), "--checkpoint",
                    str(root / "qa"), "--out", str(out)]) == 0
    r = check_evaluation(out, "synthetic_qa")
    assert r["predictions"] == pred.name
    n = len(read_squad(root / "valid.json").questions)
    assert r["n"] == n and set(r["metrics"]) == {"exact_match", "f1"} and r["missing"] == []
    last = [x for x in lines(root / "qa") if x.get("split") == "valid"][-1]  # the in-training validation
    assert r["metrics"]["f1"] == pytest.approx(last["f1"], abs=1e-9)
    answers = json.loads(pred.read_text())
    assert len(answers) == n and all(isinstance(v, str) for v in answers.values())
    again = tmp_path / "score.json"
    assert megazoo(["task", "synthetic_qa", "score", "--data", str(root / "valid.json"), "--predictions", str(pred),
                    "--out", str(again)]) == 0
    assert json.loads(again.read_text())["metrics"] == r["metrics"]


def test_export_answers_the_same_in_transformers(runs, tmp_path):
    from transformers import AutoModelForQuestionAnswering

    from megazoo.tasks.synthetic_qa.predict import Model

    root, _ = runs
    assert megazoo(["export-hf", str(root / "qa" / "checkpoints"), str(tmp_path / "hf")]) == 0
    m = Model(root / "qa")
    qs = read_squad(root / "valid.json").questions
    enc = m.builder.encode(qs, m.tokenizer)
    ours = m.builder.logits(m.chunks, m.ctx, enc)
    hf = AutoModelForQuestionAnswering.from_pretrained(tmp_path / "hf").eval()
    assert type(hf).__name__ == "BertForQuestionAnswering"
    with torch.no_grad():
        out = hf(input_ids=enc.input_ids, token_type_ids=enc.token_type_ids, attention_mask=enc.attention_mask)
    lens = enc.attention_mask.sum(-1).tolist()
    theirs = [torch.stack([out.start_logits[i, :k], out.end_logits[i, :k]], -1) for i, k in enumerate(lens)]
    for a, b in zip(ours, theirs):
        assert torch.allclose(a, b, atol=TOL)
    from megazoo.tasks.synthetic_qa.decode import decode

    hf_answers = decode([r[:, 0] for r in theirs], [r[:, 1] for r in theirs], enc, qs)
    assert [p["text"] for p in hf_answers] == [p["text"] for p in m.answer(qs)]


def test_answers_questions_filter_stages(runs, tmp_path):
    root, _ = runs
    cands = tmp_path / "answers.json"
    assert megazoo(["task", "synthetic_qa", "answers", "--data", str(root / "valid.json"), "--checkpoint",
                    str(root / "answers"), "--out", str(cands), "--top", "2"]) == 0
    f = read_squad(cands)  # the reader checks every answer_start
    assert f.questions and all(q.question == "" for q in f.questions)
    per = {}
    for q in f.questions:
        per.setdefault(q.paragraph, []).append(q.answers[0])
    for spans in per.values():  # at most 2 per paragraph, never overlapping
        assert len(spans) <= 2
        (a, sa), *rest = spans
        assert all(sb >= sa + len(a) or sb + len(b) <= sa for b, sb in rest)
    # questions: a tiny decoder fine-tuned one step with sft (its questions are noise; the files are not)
    qg = [{"prompt": f"Context: {q.context[:80]}\nAnswer: {q.answers[0][0]}\nQuestion:", "response": " What?"}
          for q in read_squad(root / "train.json").questions]
    (tmp_path / "qg.jsonl").write_text("".join(json.dumps(r) + "\n" for r in qg))
    assert megazoo(["task", "synthetic_qa", "train", "sft-tiny", "--set", f"data.path={tmp_path / 'qg.jsonl'}",
                    "model.hidden_size=32", "model.seq_length=64", "train.epochs=0", "train.steps=1",
                    "log.progress=false", "log.plot=false", "checkpoint.resume=none",
                    f"log.dir={tmp_path / 'qg'}"]) == 0
    gen = tmp_path / "questions.json"
    assert megazoo(["task", "synthetic_qa", "sample", "--data", str(cands), "--checkpoint", str(tmp_path / "qg"),
                    "--out", str(gen), "--samples", "2", "--max-new-tokens", "4", "--top-k", "5"]) == 0
    counts = json.loads((tmp_path / "questions.counts.json").read_text())
    assert counts["answers"] == len(f.questions) and counts["sampled"] == 2 * len(f.questions)
    assert counts["questions"] + counts["empty"] + counts["not_question"] + counts["repeated"] == counts["sampled"]
    # --dtype bf16: the decoder is loaded and sampled in bf16 (the recipe's choice on native-bf16 hardware)
    import torch

    from megazoo.tasks.synthetic_qa.questions import load_decoder

    model, _ = load_decoder(tmp_path / "qg", torch.bfloat16)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    assert megazoo(["task", "synthetic_qa", "questions", "--data", str(cands), "--checkpoint", str(tmp_path / "qg"),
                    "--out", str(tmp_path / "q16.json"), "--samples", "1", "--max-new-tokens", "4",
                    "--dtype", "bf16"]) == 0
    assert json.loads((tmp_path / "q16.counts.json").read_text())["sampled"] == len(f.questions)
    # filter: the tiny QA model answers the dev questions back; kept + rejected = all
    kept, rej = tmp_path / "kept.json", tmp_path / "rejected.json"
    assert megazoo(["task", "synthetic_qa", "filter", "--data", str(root / "valid.json"), "--checkpoint",
                    str(root / "qa"), "--out", str(kept), "--rejected", str(rej), "--match", "f1",
                    "--threshold", "0.01"]) == 0
    c = json.loads((tmp_path / "kept.counts.json").read_text())
    n = len(read_squad(root / "valid.json").questions)
    assert c["kept"] + c["rejected"] == c["questions"] == n
    assert len(read_squad(kept).questions) == c["kept"] and len(read_squad(rej).questions) == c["rejected"]
    for q in read_squad(kept).questions:
        assert q.extra["qa_f1"] >= 0.01


def test_leaderboard_entry(runs, monkeypatch):
    import megazoo.eval.registry as registry
    from megazoo.tasks.synthetic_qa.leaderboard import EVALUATION

    root, _ = runs
    assert registry.model_kind({"checkpoint": str(root / "qa" / "checkpoints")}) in EVALUATION.kinds
    got = EVALUATION.run(str(root / "qa" / "checkpoints"), str(root / "valid.json"), {})
    assert set(got) == {"exact_match", "f1", "n"} and got["n"] == len(read_squad(root / "valid.json").questions)
