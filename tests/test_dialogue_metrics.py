"""The dialogue metrics: ParlAI/Megatron F1 and KF1 on hand-computed pairs (normalisation, skipping of
empty and no_passages_used references, the mean over pairs); BLEU, ROUGE-L and METEOR equal to sacrebleu,
rouge-score and nltk called directly; the evaluate command end to end and its generations-count error."""

from __future__ import annotations

import json

import pytest

from megazoo.cli import main as megazoo
from megazoo.eval.metrics import knowledge_f1_scores, meteor, parlai_normalize, unigram_f1_scores
from tests.evaluation_shape import check_evaluation

# (response, gold response, gold knowledge) with F1 worked out by hand below
PAIRS = [
    ("The Cat sat, on the mat!", "a cat sat on a hat", "Cats sit on mats."),
    ("blue whales are big", "no_passages_used", "no_passages_used"),
    ("", "hello there", "hello world"),
    ("hello hello world", "hello world world", "hello world"),
]


def test_parlai_normalisation_drops_punctuation_and_articles():
    # "a" of "u.s.a" becomes a word of its own after the punctuation, then goes as an article (as in ParlAI)
    assert parlai_normalize("The U.S.A.'s best-known (an) example!") == "u s s best known example"
    assert parlai_normalize("  Theatre\tand  AN anthem ") == "theatre and anthem"


def test_f1_and_kf1_equal_hand_computed_values():
    responses = [p[0] for p in PAIRS]
    f1 = unigram_f1_scores(responses, [p[1] for p in PAIRS])
    # cat sat on mat / cat sat on hat: 3 of 4 -> 0.75; skipped; empty response -> 0;
    # {hello:2, world:1} vs {hello:1, world:2}: overlap 2 of 3 each way -> 2/3
    assert f1["count"] == 3
    assert f1["f1"] == pytest.approx((0.75 + 0.0 + 2 / 3) / 3)
    assert f1["precision"] == pytest.approx((0.75 + 0 + 2 / 3) / 3)
    kf1 = knowledge_f1_scores(responses, [p[2] for p in PAIRS])
    # cat sat on mat / cats sit on mats: only "on" -> p 1/4, r 1/4, f1 1/4; skipped; 0;
    # hello hello world / hello world: overlap 2, p 2/3, r 1 -> 0.8
    assert kf1["count"] == 3
    assert kf1["f1"] == pytest.approx((0.25 + 0.0 + 0.8) / 3)


def test_meteor_is_nltk_with_offline_wordnet():
    from nltk.translate.meteor_score import meteor_score

    from megazoo.eval.metrics.wordnet import load_wordnet

    preds = ["the cat sits on the mat", "a big dog runs"]
    refs = ["the cat sat on the mat", "the large dog was running"]
    wn = load_wordnet()
    expected = [meteor_score([r.split()], p.split(), wordnet=wn) for p, r in zip(preds, refs)]
    assert meteor(preds, refs) == pytest.approx(sum(expected) / 2)
    assert meteor(["the cat sat"], ["the cat sat"]) > 0.9
    # WordNet synonyms match (car.n.01 holds "auto"), as exactly as the word itself
    assert meteor(["i drove the auto home"], ["i drove the car home"]) == pytest.approx(
        meteor(["i drove the car home"], ["i drove the car home"]))


def _data(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("".join(f"topic\tHi there. [SEP] How are you?\t{k}\t{g}\n" for _, g, k in PAIRS))
    return path


def test_evaluate_command_writes_the_library_figures(tmp_path, capsys):
    import sacrebleu
    from rouge_score import rouge_scorer

    data, gens, out = _data(tmp_path), tmp_path / "gen.txt", tmp_path / "eval.json"
    gens.write_text("".join(p[0] + "\n" for p in PAIRS))
    assert megazoo(["task", "dialogue", "evaluate", "--data", str(data), "--generations", str(gens),
                    "--out", str(out)]) == 0
    record = check_evaluation(out, "dialogue")
    assert record["n"] == 4 and set(record["metrics"]) == {"f1", "kf1", "bleu", "rouge_l", "meteor"}
    m = record["metrics"]
    assert m["f1"] == pytest.approx((0.75 + 2 / 3) / 3)
    assert m["kf1"] == pytest.approx((0.25 + 0.8) / 3)
    preds, golds = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    assert m["bleu"] == pytest.approx(sacrebleu.corpus_bleu(preds, [golds]).score / 100)  # a fraction
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    assert m["rouge_l"] == pytest.approx(sum(scorer.score(g, p)["rougeL"].fmeasure for p, g in zip(preds, golds)) / 4)
    assert m["meteor"] == pytest.approx(meteor(preds, golds))
    per = [json.loads(x) for x in out.with_suffix(".predictions.jsonl").read_text().splitlines()]
    assert [None if p["f1"] is None else round(p["f1"], 6) for p in per] == [0.75, None, 0.0, 0.666667]
    assert "f1=0.4722" in capsys.readouterr().out


@pytest.mark.parametrize("lines,at", [(5, 5), (2, 3)])
def test_generations_with_another_line_count_is_one_error(tmp_path, capsys, lines, at):
    data, gens = _data(tmp_path), tmp_path / "gen.txt"
    gens.write_text("".join(f"response {i}\n" for i in range(lines)))
    code = megazoo(["task", "dialogue", "evaluate", "--data", str(data), "--generations", str(gens),
                    "--out", str(tmp_path / "e.json")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.strip() == (f"megazoo task dialogue evaluate: error: {gens}:{at}: {lines} generations but {data} "
                           f"has 4 samples; give one response per line, in data order")


def test_evaluate_names_a_short_tsv_line(tmp_path, capsys):
    data = tmp_path / "bad.tsv"
    data.write_text("t\tturn\tknow\tresp\nt\tturn only\n")
    gens = tmp_path / "g.txt"
    gens.write_text("a\nb\n")
    assert megazoo(["task", "dialogue", "evaluate", "--data", str(data), "--generations", str(gens),
                    "--out", str(tmp_path / "e.json")]) == 2
    assert f"{data}:2: 2 tab-separated fields, expected 4" in capsys.readouterr().err
