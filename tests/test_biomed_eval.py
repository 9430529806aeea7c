"""biomed metrics: NER equal to seqeval (I after O included), ChemProt micro P/R/F1 and BioASQ
strict/lenient accuracy and MRR on hand-computed cases; the inputs (label on the first sub-token,
QA windows with doc stride) and the n-best answer decoding."""

import random
from pathlib import Path

import pytest
import torch
from seqeval.metrics import f1_score, precision_score, recall_score

from megazoo.core.data.tokenizers import build_tokenizer
from megazoo.tasks.biomed.data import NerSentence, QAQuestion, read_split
from megazoo.tasks.biomed.evaluate import ner_metrics, qa_metrics, re_metrics
from megazoo.tasks.biomed.inputs import decode_ner, encode_ner, encode_re
from megazoo.zoo.heads import IGNORE
from megazoo.zoo.heads.qa import decode_qa, encode_qa

FIXTURES = Path(__file__).parent / "fixtures" / "biomed"


def test_ner_metrics_equal_seqeval_on_random_tags():
    rng = random.Random(0)
    for tags in (["O", "B", "I"], ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]):
        gold = [[rng.choice(tags) for _ in range(rng.randint(1, 12))] for _ in range(60)]
        pred = [[t if rng.random() < 0.7 else rng.choice(tags) for t in s] for s in gold]
        got = ner_metrics(pred, gold)
        assert got["precision"] == pytest.approx(precision_score(gold, pred), abs=1e-12)
        assert got["recall"] == pytest.approx(recall_score(gold, pred), abs=1e-12)
        assert got["f1"] == pytest.approx(f1_score(gold, pred), abs=1e-12)


def test_ner_i_after_o_counts_as_seqeval_does():
    gold = [["O", "B", "I", "O", "I", "I"]]  # the I after O opens a second entity (tokens 4-5)
    pred = [["O", "B", "I", "O", "B", "I"]]  # B-I there is the same chunk
    got = ner_metrics(pred, gold)
    assert got == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert f1_score(gold, pred) == 1.0
    pred = [["O", "B", "O", "O", "I", "O"]]  # two wrong spans: 0 of 2
    assert ner_metrics(pred, gold)["f1"] == f1_score(gold, pred) == 0.0


def test_re_micro_prf_excludes_false():
    gold = ["CPR:4", "CPR:4", "CPR:3", "false", "false", "CPR:9"]
    pred = ["CPR:4", "false", "CPR:3", "CPR:5", "false", "CPR:6"]
    # true positives 2 (CPR:4, CPR:3); predicted positives 5 - 1 false = 4; gold positives 4
    got = re_metrics(pred, gold)
    assert got["precision"] == 2 / 4 and got["recall"] == 2 / 4 and got["f1"] == 0.5
    assert re_metrics(["false"] * 6, gold) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_qa_strict_lenient_mrr_with_synonyms_and_ranks():
    gold = [["CFTR", "cystic fibrosis transmembrane conductance regulator"], ["HTT", "huntingtin"],
            ["metformin"], ["imatinib"]]
    pred = [["cftr", "x"],                      # rank 1 (case-insensitive)
            ["a", "b", "Huntingtin"],          # rank 3, a synonym
            ["a", "b", "c", "d", "e", "metformin"],  # rank 6: outside the top 5
            []]                                # nothing
    got = qa_metrics(pred, gold)
    assert got["strict_accuracy"] == 1 / 4
    assert got["lenient_accuracy"] == 2 / 4
    assert got["mrr"] == pytest.approx((1 + 1 / 3) / 4, abs=1e-15)


def test_ner_label_sits_on_the_first_subtoken():
    tok = build_tokenizer("bert-wordpiece")
    s = NerSentence(("Naloxone", "reverses", "hepatotoxicity", "."), ("B", "O", "B", "O"), 1)
    enc = encode_ner([s], tok, ["O", "B", "I"], 64)
    pieces = [tok.encode(w) for w in s.tokens]
    ids = enc.input_ids[0][: int(enc.attention_mask[0].sum())].tolist()
    assert ids == [tok.cls, *sum(pieces, []), tok.sep]
    labels = enc.targets["labels"][0].tolist()
    firsts = [1, 1 + len(pieces[0]), 1 + len(pieces[0]) + len(pieces[1]), 1 + sum(map(len, pieces[:3]))]
    assert enc.words[0] == firsts
    assert [labels[i] for i in firsts] == [1, 0, 1, 0]
    assert sum(x != IGNORE for x in labels) == 4  # every other sub-token, [CLS], [SEP] and padding ignored
    logits = torch.zeros(len(ids), 3)
    logits[firsts[2], 1] = 1  # predict B only on hepatotoxicity
    assert decode_ner([logits], enc, [s], ["O", "B", "I"]) == [["O", "O", "B", "O"]]
    short = encode_ner([s], tok, ["O", "B", "I"], 1 + len(pieces[0]) + 1)  # room for the first word only
    assert decode_ner([torch.zeros(3, 3)], short, [s], ["O", "B", "I"]) == [["O"] * 4]


def test_re_input_is_cls_sentence_sep():
    tok = build_tokenizer("bert-wordpiece")
    rel = read_split(FIXTURES / "chemprot", "re", "train")[:2]
    enc = encode_re(rel, tok, 128)
    assert enc.targets["labels"].tolist() == [2, 1]  # CPR:4, CPR:3 in (false, CPR:3, CPR:4, ...)
    assert enc.input_ids[0, 0] == tok.cls and tok.encode(rel[0].sentence)[:3] == enc.input_ids[0, 1:4].tolist()


def test_qa_windows_targets_and_nbest_decoding():
    tok = build_tokenizer("bert-wordpiece")
    context = " ".join(f"word{i}" for i in range(30)) + " The answer is CFTR here ."
    start = context.index("CFTR")
    q = QAQuestion("q1", "Which gene?", context, ("CFTR", "cftr gene"), start, "CFTR", 1)
    enc = encode_qa([q], tok, max_seq_length=40, doc_stride=16, max_query_length=8)
    n_doc = len(tok.encode(context))
    assert len(enc) == 1 + -(-(n_doc - 33) // 16)  # windows of 40 - 4 - 3 = 33 tokens every 16
    for row in range(len(enc)):
        s, e = int(enc.targets["start_positions"][row]), int(enc.targets["end_positions"][row])
        qi, mapping, best = enc.rows[row]
        if s:  # the window holds the answer: its tokens map back to "CFTR"
            assert context[mapping[s][0]:mapping[e][1]] == "CFTR"
        else:
            assert e == 0
    assert any(int(x) for x in enc.targets["start_positions"])
    # logits that point at the answer (chars start..start+4) and, less, at "word3" in the first window
    w3 = context.index("word3 ")
    starts, ends = [], []
    for row in range(len(enc)):
        qi, mapping, best = enc.rows[row]
        n = int(enc.attention_mask[row].sum())
        s_log, e_log = torch.zeros(n), torch.zeros(n)
        for t, (a, b) in mapping.items():
            s_log[t] += 5.0 * (a == start) + 3.0 * (a == w3 and row == 0)
            e_log[t] += 5.0 * (b == start + 4) + 3.0 * (b == w3 + 5 and row == 0)
        starts.append(s_log)
        ends.append(e_log)
    ranked = decode_qa(starts, ends, enc, [q], n_best=20, max_answer_length=30)[0]
    texts = [a["text"] for a in ranked]
    assert texts[0] == "CFTR" and "word3" in texts[:3]
    assert len(texts) == len(set(texts))  # one entry per distinct text
    assert all(x["score"] >= y["score"] for x, y in zip(ranked, ranked[1:]))


def test_evaluation_files_of_each_kind(tmp_path):
    """The evaluate stage's writer: FILE.json in the kit's shape and each kind's predictions file
    (CoNLL text, ChemProt TSV, BioASQ JSON) beside it, scored here with one wrong prediction each."""
    import json

    from megazoo.tasks.biomed.evaluate import write_evaluation
    from tests.evaluation_shape import check_evaluation

    data = {"ner": FIXTURES / "ner" / "test.tsv", "re": FIXTURES / "chemprot" / "test.tsv",
            "qa": FIXTURES / "bioasq" / "test.json"}
    for kind, path in data.items():
        examples = read_split(path, kind, "test")
        if kind == "ner":
            preds = [list(x.labels) for x in examples]
            preds[0] = ["O"] * len(preds[0])
            metrics = ner_metrics(preds, [list(x.labels) for x in examples])
        elif kind == "re":
            preds = [x.label for x in examples[:-1]] + ["CPR:9" if examples[-1].label != "CPR:9" else "false"]
            metrics = re_metrics(preds, [x.label for x in examples])
        else:
            preds = [[{"text": "nothing", "score": 2.0}] + [{"text": a, "score": 1.0} for a in x.answers[:1]]
                     for x in examples]
            metrics = qa_metrics([[a["text"] for a in p] for p in preds], [list(x.answers) for x in examples])
        out, pred = write_evaluation(tmp_path / kind / "eval.json", kind, examples, preds, metrics, data=str(path))
        summary = check_evaluation(out, "biomed")
        assert summary["kind"] == kind and summary["n"] == len(examples) and summary["metrics"] == metrics
        assert pred.name == {"ner": "eval.predictions.txt", "re": "eval.predictions.tsv",
                             "qa": "eval.predictions.json"}[kind] == summary["predictions"]
        assert 0 < metrics["mrr" if kind == "qa" else "f1"] < 1  # the wrong predictions show
        text = pred.read_text()
        if kind == "ner":
            assert text.split("\n\n")[0].split("\n")[0] == f"{examples[0].tokens[0]} {examples[0].labels[0]} O"
        elif kind == "re":
            assert text.splitlines()[0] == f"{examples[0].id}\t{examples[0].label}\t{preds[0]}"
        else:
            rows = json.loads(text)
            assert rows[0] == {"id": examples[0].id, "answers": ["nothing", examples[0].answers[0]],
                               "scores": [2.0, 1.0], "gold": list(examples[0].answers)}
