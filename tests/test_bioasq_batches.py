"""BioASQ test batches scored per question (issue #38, point 4): the golden-file reader, the
aggregation of each question's snippets (BioBERT's transform_nbset2bioasqform.py: per-snippet
softmax, case-insensitive duplicates summed and kept once, top 5) and strict/lenient accuracy and
MRR on a hand-made batch scored by hand; bad inputs with their one-line errors; the evaluate stage
with --golden on a tiny trained QA checkpoint."""

import json
import math
from pathlib import Path

import pytest

from megazoo.tasks.biomed.bioasq import (merge_snippets, question_of, read_golden, score_questions,
                                         snippet_probabilities)
from megazoo.tasks.biomed.data import BiomedFormatError, read_squad_json
from tests.cli_helpers import one_line, run_cli

L = math.log  # a snippet's n-best scores log(a), log(b), ... have probabilities a/(a+b+...), b/(a+b+...)

GOLDEN = {"questions": [
    {"id": "q1", "type": "factoid", "body": "Which gene is mutated in Huntington disease?",
     "exact_answer": [["HTT", "huntingtin"]]},                       # nested synonym list
    {"id": "q2", "type": "factoid", "body": "What is the first line drug for type 2 diabetes?",
     "exact_answer": ["metformin", "Glucophage"]},                   # flat synonym list
    {"id": "q3", "type": "factoid", "body": "Which drug targets BCR-ABL?",
     "exact_answer": [["imatinib"], ["Gleevec", "STI571"]]},         # two synonym lists
    {"id": "q4", "type": "factoid", "body": "Which gene is mutated in cystic fibrosis?",
     "exact_answer": [["CFTR"]]},                                    # no snippet in the batch
    {"id": "q5", "type": "list", "body": "List statins.", "exact_answer": [["atorvastatin"], ["simvastatin"]]},
    {"id": "q6", "type": "yesno", "body": "Is aspirin an NSAID?", "exact_answer": "yes"},
    {"id": "q7", "type": "summary", "body": "What is CRISPR?", "ideal_answer": ["A gene editing tool."]},
]}

# the snippets of the batch and their n-best lists, as the QA builder's predict returns them
PREDICTIONS = {
    "q1_001": [("Huntingtin", L(3)), ("CAG repeat", L(1))],           # 0.75, 0.25
    "q1_002": [("huntingtin", L(1)), ("HTT gene", L(1))],             # 0.5, 0.5
    "q2_001": [("insulin", L(6)), ("metformin", L(4))],               # 0.6, 0.4
    "q2_002": [("insulin", L(1)), ("glucophage", L(1))],              # 0.5, 0.5
    "q3_001": [("BCR-ABL", L(1))],                                     # 1.0
    "q3_002": [("chronic myeloid leukemia", L(3)), ("Gleevec", L(2))],  # 0.6, 0.4
    "q3_003": [("dasatinib", L(1)), ("nilotinib", L(1)), ("ponatinib", L(1)), ("bosutinib", L(1))],  # 0.25 each
    "q5_001": [("atorvastatin", L(1))],                                # a list question's snippet: left out
}
# by hand, per question (answers in order, with their summed probabilities):
#   q1: Huntingtin 0.75 + 0.5 = 1.25 (its lower-case twin summed into it, shown once), HTT gene 0.5,
#       CAG repeat 0.25                                          -> "Huntingtin" is gold: rank 1
#   q2: insulin 0.6 + 0.5 = 1.1, glucophage 0.5, metformin 0.4  -> "glucophage" ~ "Glucophage": rank 2
#   q3: BCR-ABL 1.0, chronic myeloid leukemia 0.6, Gleevec 0.4, dasatinib 0.25, nilotinib 0.25
#       (ponatinib and bosutinib, 0.25 too, fall outside the top 5) -> "Gleevec": rank 3
#   q4: no snippet                                               -> wrong
# strict 1/4, lenient 3/4, MRR (1 + 1/2 + 1/3 + 0) / 4; q5, q6, q7 are skipped (3 non-factoid)
EXPECTED = {"strict_accuracy": 1 / 4, "lenient_accuracy": 3 / 4, "mrr": (1 + 1 / 2 + 1 / 3 + 0) / 4}
CONTEXT = {"q1": "Huntington disease is caused by a CAG repeat expansion in the HTT gene, also called huntingtin.",
           "q2": "Metformin (Glucophage) is the first line drug for type 2 diabetes; insulin comes later.",
           "q3": "Imatinib (Gleevec, STI571) inhibits BCR-ABL in chronic myeloid leukemia, as dasatinib does.",
           "q5": "Atorvastatin and simvastatin lower cholesterol."}


def write_batch(folder: Path, ids=tuple(PREDICTIONS)) -> Path:
    """A BioBERT-style test batch: SQuAD-v1.1 JSON, one paragraph and one qas entry per snippet."""
    body = {q["id"]: q["body"] for q in GOLDEN["questions"]}
    paragraphs = [{"context": CONTEXT[question_of(s)], "qas": [{"id": s, "question": body[question_of(s)]}]}
                  for s in ids]
    path = folder / "BioASQ-test-factoid-7b-1.json"
    path.write_text(json.dumps({"version": "BioASQ7b", "data": [{"title": "bioasq", "paragraphs": paragraphs}]},
                               indent=1))
    return path


def write_golden(folder: Path, golden=None, name="7B1_golden.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(GOLDEN if golden is None else golden, indent=1))
    return path


def hand_predictions(examples) -> list[list[dict]]:
    return [[{"text": t, "score": s} for t, s in PREDICTIONS[x.id]] for x in examples]


def test_hand_made_batch_scored_per_question(tmp_path):
    batch, golden = write_batch(tmp_path), read_golden(write_golden(tmp_path))
    assert list(golden.questions) == ["q1", "q2", "q3", "q4"] and golden.skipped == 3
    assert golden.questions["q2"].synonyms == ("metformin", "Glucophage")
    assert golden.questions["q3"].synonyms == ("imatinib", "Gleevec", "STI571")
    examples = read_squad_json(batch)
    scores = score_questions(golden, examples, hand_predictions(examples), batch)
    assert scores.metrics == pytest.approx(EXPECTED, abs=1e-12)
    assert (scores.n_questions, scores.n_skipped, scores.n_without_prediction) == (4, 3, 1)
    rows = {r["id"]: r for r in scores.rows}
    assert rows["q1"]["answers"] == ["Huntingtin", "HTT gene", "CAG repeat"]
    assert rows["q1"]["scores"] == pytest.approx([1.25, 0.5, 0.25])
    assert rows["q1"]["gold"] == ["HTT", "huntingtin"]
    assert rows["q2"]["answers"] == ["insulin", "glucophage", "metformin"]
    assert rows["q3"]["answers"] == ["BCR-ABL", "chronic myeloid leukemia", "Gleevec", "dasatinib", "nilotinib"]
    assert rows["q4"] == {"id": "q4", "answers": [], "scores": [], "gold": ["CFTR"]}
    assert "q5" not in rows  # a list question's snippet is left out


def test_duplicates_across_snippets_are_summed_once_case_insensitively():
    # BioBERT adds the probability of a repeated text (any case) to its most probable spelling
    one = [{"text": "EGFR", "score": L(1)}, {"text": "KRAS", "score": L(1)}]            # 0.5, 0.5
    two = [{"text": "TP53", "score": L(3)}, {"text": "egfr", "score": L(2)}]            # 0.6, 0.4
    three = [{"text": "egfr", "score": L(7)}, {"text": "BRAF", "score": L(3)}]          # 0.7, 0.3
    merged = merge_snippets([one, two, three])
    assert [t for t, _ in merged] == ["egfr", "TP53", "KRAS", "BRAF"]  # spelled as its best (0.7) snippet
    assert [p for _, p in merged] == pytest.approx([0.7 + 0.5 + 0.4, 0.6, 0.5, 0.3])
    # 0.5 + 0.4 = 0.9 puts EGFR above TP53 (0.6); keeping the higher probability (0.5) would not
    assert [t for t, _ in merge_snippets([one, two])] == ["EGFR", "TP53", "KRAS"]
    # empty texts and texts over 100 characters are not answers; at most 5 are kept
    long = [{"text": "x" * 101, "score": L(9)}, {"text": "", "score": L(9)}, {"text": "y" * 100, "score": L(1)}]
    assert [t for t, _ in merge_snippets([long])] == ["y" * 100]
    many = [[{"text": f"t{i}", "score": -i}] for i in range(8)]
    assert [t for t, _ in merge_snippets(many)] == ["t0", "t1", "t2", "t3", "t4"]  # 1.0 each: snippet order


def test_snippet_probabilities_are_a_softmax_of_its_nbest():
    probs = snippet_probabilities([{"text": "a", "score": 2.0}, {"text": "b", "score": 0.0}])
    assert [t for t, _ in probs] == ["a", "b"]
    assert [p for _, p in probs] == pytest.approx([math.e ** 2 / (math.e ** 2 + 1), 1 / (math.e ** 2 + 1)])
    assert snippet_probabilities([]) == []


def test_question_id_is_before_the_last_underscore():
    assert question_of("5c7e4c2d7c78d69471000001_001") == "5c7e4c2d7c78d69471000001"
    assert question_of("a_b_012") == "a_b"
    assert question_of("5c7e4c2d7c78d69471000001") == "5c7e4c2d7c78d69471000001"  # its own question


def test_synonyms_match_case_insensitively_nested_or_flat(tmp_path):
    golden = {"questions": [{"id": "n", "type": "factoid", "exact_answer": [["Insulin Receptor", "INSR"]]},
                            {"id": "f", "type": "factoid", "exact_answer": ["TNF-alpha", "TNF"]},
                            {"id": "s", "type": "factoid", "exact_answer": "BRCA1"}]}
    g = read_golden(write_golden(tmp_path, golden))
    assert [q.synonyms for q in g.questions.values()] == [("Insulin Receptor", "INSR"), ("TNF-alpha", "TNF"),
                                                          ("BRCA1",)]
    batch = tmp_path / "b.json"
    batch.write_text(json.dumps({"data": [{"paragraphs": [
        {"context": "c", "qas": [{"id": "n_001", "question": "?"}, {"id": "f_001", "question": "?"},
                                 {"id": "s_001", "question": "?"}]}]}]}))
    examples = read_squad_json(batch)
    preds = [[{"text": "insr", "score": 0.0}], [{"text": "tnf-ALPHA", "score": 0.0}], [{"text": "brca2", "score": 0.0}]]
    scores = score_questions(g, examples, preds, batch)
    assert scores.metrics == {"strict_accuracy": 2 / 3, "lenient_accuracy": 2 / 3, "mrr": 2 / 3}


def test_a_golden_file_that_is_not_json_names_file_and_line(tmp_path):
    bad = tmp_path / "golden.json"
    bad.write_text('{"questions": [\n {"id": "q1",\n  "type": "factoid" "exact_answer": [["x"]]}\n]}\n')
    with pytest.raises(BiomedFormatError) as e:
        read_golden(bad)
    assert str(e.value).startswith(f"{bad}:3: not valid JSON (Expecting ',' delimiter)")
    assert "\n" not in str(e.value)


def test_a_factoid_question_without_exact_answer(tmp_path):
    golden = {"questions": [GOLDEN["questions"][0], {"id": "q2", "type": "factoid", "body": "?"}]}
    path = write_golden(tmp_path, golden)
    with pytest.raises(BiomedFormatError) as e:
        read_golden(path)
    line = 1 + [i for i, text in enumerate(path.read_text().split("\n")) if text == "  {"][1]  # question 2's `{`
    assert str(e.value) == (f"{path}:{line}: question 2 (id q2): a factoid question without 'exact_answer' "
                            f"(give the golden file, not the test set)")
    golden["questions"][1] = {"id": "q2", "type": "factoid", "exact_answer": [[]]}
    with pytest.raises(BiomedFormatError, match=r"question 2 \(id q2\): 'exact_answer' holds no answer text"):
        read_golden(write_golden(tmp_path, golden))
    golden["questions"][1] = {"id": "q2", "type": "quiz", "exact_answer": "x"}
    with pytest.raises(BiomedFormatError, match="'type' 'quiz' is not one of factoid, list, yesno, summary"):
        read_golden(write_golden(tmp_path, golden))
    with pytest.raises(BiomedFormatError, match=r":1: no 'questions' list"):
        read_golden(write_golden(tmp_path, {"data": []}))


def test_a_snippet_whose_question_is_not_in_the_golden_file(tmp_path):
    batch = write_batch(tmp_path)
    golden = read_golden(write_golden(tmp_path, {"questions": GOLDEN["questions"][1:]}))  # no q1
    examples = read_squad_json(batch)
    with pytest.raises(BiomedFormatError) as e:
        score_questions(golden, examples, hand_predictions(examples), batch)
    assert examples[0].article == 1  # the batch is streamed article by article: the article is named
    assert str(e.value) == (f"{batch}: article 1: snippet 'q1_001': its question 'q1' is not in the golden "
                            f"file {golden.path}; give this batch's golden file")


def test_cli_errors_before_the_model_is_built(tmp_path, capsys):
    from tests.test_policy_biomed import fake_checkpoint  # a meta.json alone: nothing to load

    batch = write_batch(tmp_path)
    golden = write_golden(tmp_path, {"questions": GOLDEN["questions"][1:]})
    ckpt = fake_checkpoint(tmp_path / "run", "qa")
    base = ["task", "biomed", "evaluate", "--data", batch, "--checkpoint", ckpt, "--out", tmp_path / "o" / "e.json"]
    code, err = run_cli(capsys, *base, "--kind", "qa", "--golden", golden)
    assert code == 2 and one_line(err).endswith(f"{batch}: article 1: snippet 'q1_001': its "
                                                f"question 'q1' is not in the golden file {golden}; give this "
                                                f"batch's golden file")
    code, err = run_cli(capsys, *base, "--kind", "ner", "--golden", golden)
    assert code == 2 and "use it with --kind qa" in one_line(err)
    code, err = run_cli(capsys, *base, "--kind", "qa", "--golden", tmp_path / "none.json")
    assert code == 2 and "--golden" in one_line(err) and "none.json: no such file" in err
    assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def qa_checkpoint(tmp_path_factory):
    """A tiny BERT fine-tuned on the biomed QA fixture for one epoch (tests/test_biomed_finetune.py)."""
    from megazoo.cli import main as megazoo
    from tests.test_biomed_finetune import make_tiny_bert, overrides

    root = tmp_path_factory.mktemp("bioasq")
    init = make_tiny_bert(root / "tiny")
    assert megazoo(["task", "biomed", "train", "biomed-qa", "--set",
                    *overrides("qa", root / "qa", init, "train.epochs=1", "train.eval_interval=100")]) == 0
    return root / "qa" / "checkpoints"


def test_evaluate_with_golden_scores_per_question(qa_checkpoint, tmp_path, capsys):
    """Through the CLI: per question with --golden, equal to aggregating the per-snippet predictions
    the same stage writes without it; the kit's evaluation shape plus the three counts."""
    from megazoo.cli import main as megazoo
    from tests.evaluation_shape import check_evaluation

    batch, golden = write_batch(tmp_path), write_golden(tmp_path)
    args = ["task", "biomed", "evaluate", "--kind", "qa", "--data", str(batch), "--checkpoint", str(qa_checkpoint)]
    assert megazoo([*args, "--out", str(tmp_path / "snippets.json")]) == 0
    assert megazoo([*args, "--golden", str(golden), "--out", str(tmp_path / "questions.json")]) == 0
    assert "per question of" in capsys.readouterr().out
    summary = check_evaluation(tmp_path / "questions.json", "biomed")
    assert (summary["n"], summary["n_questions"], summary["n_skipped"], summary["n_without_prediction"]) == (4, 4, 3, 1)
    assert summary["golden"] == str(golden) and summary["kind"] == "qa"
    rows = json.loads((tmp_path / "questions.predictions.json").read_text())
    assert [r["id"] for r in rows] == ["q1", "q2", "q3", "q4"] and rows[3]["answers"] == []
    assert rows[1]["gold"] == ["metformin", "Glucophage"] and all(len(r["answers"]) <= 5 for r in rows)
    snippets = json.loads((tmp_path / "snippets.predictions.json").read_text())
    examples = read_squad_json(batch)
    assert [s["id"] for s in snippets] == [x.id for x in examples]
    again = score_questions(read_golden(golden), examples,
                            [[{"text": t, "score": s} for t, s in zip(p["answers"], p["scores"])] for p in snippets],
                            batch)
    assert again.rows == rows and again.metrics == summary["metrics"]


def test_leaderboard_entry_with_golden_scores_per_question(qa_checkpoint, tmp_path):
    """The suite entry `{name: biomed-qa, path: BATCH, golden: GOLDEN}`: the evaluate stage's per-question
    figures (as BioMegatron reports BioASQ); without `golden`, per snippet; `golden` on ner refused."""
    from megazoo.tasks.biomed.evaluate_stage import evaluate_checkpoint
    from megazoo.tasks.biomed.leaderboard import NER, QA

    batch, golden = write_batch(tmp_path), write_golden(tmp_path)
    got = QA.run(str(qa_checkpoint), str(batch), {"name": "biomed-qa", "golden": str(golden)})
    want = evaluate_checkpoint(batch, qa_checkpoint, "qa", golden=str(golden))
    assert {k: got[k] for k in want["metrics"]} == want["metrics"] and (got["n"], got["n_skipped"]) == (4, 3)
    per_snippet = QA.run(str(qa_checkpoint), str(batch), {"name": "biomed-qa"})
    assert per_snippet["n"] == len(read_squad_json(batch)) and "n_skipped" not in per_snippet
    with pytest.raises(ValueError, match="`golden` names the BioASQ golden file of a qa test batch"):
        NER.run(str(qa_checkpoint), str(batch), {"name": "biomed-ner", "golden": str(golden)})


def test_golden_scoring_of_a_batch_given_as_parquet(qa_checkpoint, tmp_path):
    """The same test batch as a Hugging Face `squad`-schema parquet file: the same per-question figures."""
    import datasets

    from megazoo.tasks.biomed.evaluate_stage import evaluate_checkpoint

    batch, golden = write_batch(tmp_path), write_golden(tmp_path)
    rows = [{"id": x.id, "title": "", "context": x.context, "question": x.question,
             "answers": {"text": [t for t, _ in x.answers], "answer_start": [s for _, s in x.answers]}}
            for x in read_squad_json(batch)]
    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "batch.parquet"))
    native = evaluate_checkpoint(batch, qa_checkpoint, "qa", golden=str(golden))
    parquet = evaluate_checkpoint(tmp_path / "batch.parquet", qa_checkpoint, "qa", golden=str(golden))
    assert parquet["metrics"] == native["metrics"] and parquet["questions"].rows == native["questions"].rows
