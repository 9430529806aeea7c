"""Every paper metric of megazoo.eval.metrics against an independent reference on hundreds of random
cases (seeded): the official scripts' logic restated here function by function (SQuAD
evaluate-v1.1.py and evaluate-v2.0.py, DPR's SimpleTokenizer / has_answer / calculate_matches,
ParlAI's normalize_answer and F1 as Megatron's MSDP metrics use them, Megatron's perspective_api.py
toxicity figures, seqeval's chunking, the BioASQ and MEGATRON-CNTRL definitions) or the reference
library itself (scikit-learn, seqeval). The reported scale is checked too: fractions in [0, 1]."""

from __future__ import annotations

import collections
import random
import re
import unicodedata

import numpy as np
import pytest
import regex

from megazoo.eval import metrics as m
from tests.squad_reference import v1_evaluate, v2_evaluate

CASES = 300  # random cases per metric

# ---- random text -------------------------------------------------------------------------------
WORDS = ["the", "The", "a", "An", "an", "THE", "Paris", "paris", "tower", "Tower", "Eiffel", "1889", "1,000", "330",
         "m", "Café", unicodedata.normalize("NFD", "café"), "cafe", "naïve", "U.S.", "x-ray", "don't", "'s", "!",
         "?!", "(", ")", "—", "“la", "dame”", "東京", "İstanbul", "Straße", "e\u0301", "42", "theater",
         "anthem",
         "Mary", "Shelley", "shelley", "no_passages_used", "_", "-", "..."]
SPACES = [" ", " ", " ", "  ", "\t", "\u00a0", "\n"]


def text(rng: random.Random, low: int = 0, high: int = 8) -> str:
    n = rng.randint(low, high)
    out = ""
    for i in range(n):
        out += (rng.choice(SPACES) if i else "") + rng.choice(WORDS)
    return out if rng.random() > 0.05 else f" {out} "


def _as_v2_report(ours: dict) -> dict:
    names = {"exact_match": "exact", "f1": "f1", "has_ans_exact_match": "HasAns_exact", "has_ans_f1": "HasAns_f1",
             "no_ans_exact_match": "NoAns_exact", "no_ans_f1": "NoAns_f1"}
    return {names[k]: 100.0 * v for k, v in ours.items()}


def _random_qas(rng, v2):
    qas, preds = [], {}
    for i in range(rng.randint(1, 8)):
        answers = [] if v2 and rng.random() < 0.3 else [text(rng, 0 if rng.random() < 0.2 else 1, 4)
                                                         for _ in range(rng.randint(1, 3))]
        qas.append((f"q{i}", answers))
        choice = rng.random()
        if answers and choice < 0.4:  # close to a gold answer: shares tokens, case, punctuation
            preds[f"q{i}"] = rng.choice(answers) + rng.choice(["", "!", " the", ".", " Paris"])
        elif choice < 0.55:
            preds[f"q{i}"] = ""
        elif choice > 0.95 and not v2:
            continue  # unanswered: scores 0 in v1.1
        else:
            preds[f"q{i}"] = text(rng, 1, 4)
    return qas, preds


def test_squad_v1_equals_the_official_script_on_random_cases():
    rng = random.Random(11)
    scored = []
    for _ in range(CASES):
        qas, preds = _random_qas(rng, v2=False)
        ref = v1_evaluate(qas, preds)
        ours = m.squad_scores([preds.get(q) for q, _ in qas], [a for _, a in qas])
        assert set(ours) == {"exact_match", "f1"} and all(0 <= v <= 1 for v in ours.values())
        assert {k: 100 * v for k, v in ours.items()} == pytest.approx(ref, abs=1e-9), (qas, preds)
        scored.append(ref["exact_match"])
    assert 0 < np.mean(scored) < 100  # the cases cover hits and misses


def test_squad_v2_equals_the_official_script_on_random_cases():
    rng = random.Random(12)
    for case in range(CASES):
        qas, preds = _random_qas(rng, v2=True)
        probs = {q: rng.random() for q, _ in qas} if case % 2 else None
        thresh = rng.choice([0.3, 0.5, 1.0])
        ref = v2_evaluate(qas, preds, probs, thresh if probs else 1.0)
        ours = m.squad_scores([preds[q] for q, _ in qas], [a for _, a in qas], squad_v2=True,
                              no_answer_probs=[probs[q] for q, _ in qas] if probs else None,
                              no_answer_threshold=thresh if probs else 1.0)
        assert _as_v2_report(ours) == pytest.approx(ref, abs=1e-9), (qas, preds, probs)


def test_squad_v2_no_answer_rule():
    # a question without gold answers is scored against [""]: the empty prediction matches it
    assert m.squad_scores([""], [[]], squad_v2=True) == {"exact_match": 1.0, "f1": 1.0, "no_ans_exact_match": 1.0,
                                                          "no_ans_f1": 1.0}
    assert m.squad_scores(["Paris"], [[]], squad_v2=True)["f1"] == 0.0
    # a gold answer that normalises to nothing ("a") is dropped: "" then scores 0/0, as the script says
    assert v2_evaluate([("q", ["a", "x"])], {"q": ""}) == {"exact": 0.0, "f1": 0.0, "HasAns_exact": 0.0,
                                                             "HasAns_f1": 0.0}
    assert m.squad_scores([""], [["a", "x"]], squad_v2=True) == {"exact_match": 0.0, "f1": 0.0,
                                                                  "has_ans_exact_match": 0.0, "has_ans_f1": 0.0}
    # only such answers: the question counts as unanswerable for scoring, answerable for the split
    assert m.squad_scores([""], [["the"]], squad_v2=True)["has_ans_exact_match"] == 1.0
    # v1.1 keeps every gold answer: "" against "a" is EM 1 (both normalise to nothing), F1 0
    assert m.squad_scores([""], [["a", "x"]]) == {"exact_match": 1.0, "f1": 0.0} == {
        k: v / 100 for k, v in v1_evaluate([("q", ["a", "x"])], {"q": ""}).items()}


def test_reader_exact_match_ignores_spaces_on_request():
    assert m.squad_exact_match("1, 000", ["1,000"], ignore_spaces=True) == 1.0
    assert m.squad_exact_match("1, 000", ["1,000"]) == 0.0
    assert m.squad_exact_match("the Mary  Shelley.", ["Mary Shelley"]) == 1.0


# ---- DPR: SimpleTokenizer, has_answer, calculate_matches, restated (`regex`, as DPR imports it) ---
class SimpleTokenizer:
    ALPHA_NUM = r"[\p{L}\p{N}\p{M}]+"
    NON_WS = r"[^\p{Z}\p{C}]"

    def __init__(self):
        self._regexp = regex.compile("(%s)|(%s)" % (self.ALPHA_NUM, self.NON_WS),
                                     flags=regex.IGNORECASE + regex.UNICODE + regex.MULTILINE)

    def words(self, text, uncased=True):
        tokens = [match.group() for match in self._regexp.finditer(text)]
        return [t.lower() for t in tokens] if uncased else tokens


def _normalize(text):
    return unicodedata.normalize("NFD", text)


def regex_match(text, pattern):
    try:
        pattern = regex.compile(pattern, flags=regex.IGNORECASE + regex.UNICODE + regex.MULTILINE)
    except BaseException:
        return False
    return pattern.search(text) is not None


def dpr_has_answer(answers, text, tokenizer, match_type):
    text = _normalize(text)
    if match_type == "string":
        text = tokenizer.words(text, uncased=True)
        for single_answer in answers:
            single_answer = tokenizer.words(_normalize(single_answer), uncased=True)
            for i in range(0, len(text) - len(single_answer) + 1):
                if single_answer == text[i: i + len(single_answer)]:
                    return True
    elif match_type == "regex":
        for single_answer in answers:
            if regex_match(text, _normalize(single_answer)):
                return True
    return False


def dpr_top_k(question_hits, max_k):
    """calculate_matches' top_k_hits, then validate's division by the number of questions."""
    top_k_hits = [0] * max_k
    for hits in question_hits:
        best_hit = next((i for i, x in enumerate(hits) if x), None)
        if best_hit is not None:
            top_k_hits[best_hit:] = [v + 1 for v in top_k_hits[best_hit:]]
    return [v / len(question_hits) for v in top_k_hits]


PATTERNS = [r"\p{L}+", r"\p{Lu}\p{Ll}+", r"caf\p{L}", r"caf\p{M}*", r"\p{Han}", r"\d+", r"\d{1,3}(,\d{3})*",
            "(unclosed",
            "[", "x|y", r"\bthe\b", r"^\p{Lu}", r"shel+ey", r"stra(ß|ss)e", r"\p{N}\p{P}"]


def test_dpr_simple_tokenizer_and_has_answer_string_mode_on_random_cases():
    rng = random.Random(21)
    tok = SimpleTokenizer()
    found = 0
    for _ in range(CASES):
        passage = text(rng, 0, 12)
        words = passage.split()
        answers = []
        for _ in range(rng.randint(1, 3)):
            if words and rng.random() < 0.5:
                i = rng.randrange(len(words))
                answers.append(" ".join(words[i:i + rng.randint(1, 3)]).upper() if rng.random() < 0.3
                               else " ".join(words[i:i + rng.randint(1, 3)]))
            else:  # rarely an answer without tokens: DPR finds it in every passage
                answers.append(text(rng, 0 if rng.random() < 0.03 else 1, 2))
        if rng.random() < 0.5:  # passage and answers in the two Unicode forms: NFD makes them equal
            forms = rng.sample(["NFC", "NFD"], 2)
            passage = unicodedata.normalize(forms[0], passage)
            answers = [unicodedata.normalize(forms[1], a) for a in answers]
        assert m.dpr_tokenize(passage) == tok.words(_normalize(passage))
        assert m.simple_tokenize(passage) == tok.words(passage)
        expected = dpr_has_answer(answers, passage, tok, "string")
        assert m.has_answer(answers, passage) == expected, (answers, passage)
        found += expected
    assert 0.2 * CASES < found < 0.95 * CASES


def test_dpr_has_answer_regex_mode_on_random_cases():
    rng = random.Random(22)
    tok = SimpleTokenizer()
    found = 0
    for _ in range(CASES):
        passage = text(rng, 0, 10)
        answers = [rng.choice(PATTERNS) + (rng.choice(["", "s?", r"\s+\p{L}+"]) if rng.random() < 0.5 else "")
                   for _ in range(rng.randint(1, 2))]
        expected = dpr_has_answer(answers, passage, tok, "regex")
        assert m.has_answer(answers, passage, match="regex") == expected, (answers, passage)
        found += expected
    assert 0.2 * CASES < found < 0.95 * CASES


def test_dpr_regex_mode_compiles_unicode_property_patterns():
    with pytest.raises(re.error):
        re.compile(r"caf\p{L}")  # the standard library cannot: DPR uses `regex`
    assert m.has_answer([r"caf\p{L}"], "Le Café de Flore", match="regex")  # NFD: "cafe" + a combining mark
    assert m.has_answer([r"\p{Lu}\p{Ll}+\s+Shelley"], "written by mary shelley", match="regex")  # IGNORECASE
    assert m.has_answer([r"\p{Han}"], "東京", match="regex") and not m.has_answer([r"\p{Han}"], "Tokyo", match="regex")
    assert not m.has_answer(["(unclosed"], "(unclosed", match="regex")  # a bad pattern never matches


def test_dpr_top_k_equals_calculate_matches_on_random_cases():
    rng = random.Random(23)
    for _ in range(CASES):
        hits = [[rng.random() < 0.15 for _ in range(rng.randint(0, 12))] for _ in range(rng.randint(1, 9))]
        ks = sorted(rng.sample(range(1, 15), 3))
        ref = dpr_top_k(hits, 14)
        ours = m.top_k_accuracy(hits, ks)
        assert list(ours) == [f"top{k}" for k in ks]
        assert [ours[f"top{k}"] for k in ks] == pytest.approx([ref[k - 1] for k in ks], abs=1e-12)
    answers = [["Mary Shelley"], ["Lyon"]]
    passages = [["Percy wrote.", "Mary Shelley wrote it."], ["Rome.", "Paris."]]
    assert m.retrieval_top_k_accuracy(answers, passages, ks=(1, 2)) == {"top1": 0.0, "top2": 0.5}


# ---- ParlAI F1 / KF1 as Megatron's tasks/msdp/metrics.py and evaluate.py compute them -------------
re_art = re.compile(r"\b(a|an|the)\b")
re_punc = re.compile(r"[!\"#$%&()*+,-./:;<=>?@\[\]\\^`{|}~_\']")


def parlai_normalize_answer(s):
    s = s.lower()
    s = re_punc.sub(" ", s)
    s = re_art.sub(" ", s)
    return " ".join(s.split())


def prec_recall_f1_score(pred_items, gold_items):
    common = collections.Counter(gold_items) & collections.Counter(pred_items)
    num_same = sum(common.values())
    if num_same == 0:
        return 0, 0, 0
    precision = 1.0 * num_same / len(pred_items)
    recall = 1.0 * num_same / len(gold_items)
    return precision, recall, (2 * precision * recall) / (precision + recall)


def msdp_f1(guesses, answers):
    """evaluate_f1's reading (lines stripped, no_passages_used -> "") and F1Metric.compute_all_pairs."""
    guesses = [g.strip() for g in guesses]
    answers = ["" if a.strip() == "no_passages_used" else a.strip() for a in answers]
    p_list, r_list, f_list = [], [], []
    for guess, answer in zip(guesses, answers):
        if answer == "":
            continue
        if guess == "":
            p, r, f = 0, 0, 0
        else:
            p, r, f = prec_recall_f1_score(parlai_normalize_answer(guess).split(),
                                           parlai_normalize_answer(answer).split())
        p_list.append(p)
        r_list.append(r)
        f_list.append(f)
    return np.mean(p_list), np.mean(r_list), np.mean(f_list), len(f_list)


def test_parlai_f1_and_kf1_equal_msdp_on_random_cases():
    rng = random.Random(31)
    for case in range(CASES):
        n = rng.randint(1, 6)
        answers = [text(rng, 0 if rng.random() < 0.2 else 1, 8) for _ in range(n)]
        answers[0] = answers[0] or "paris"  # at least one pair is scored
        guesses = [(rng.choice(answers) + " " + text(rng, 0, 3)) if rng.random() < 0.5 else text(rng, 0, 8)
                   for _ in range(n)]
        p, r, f, count = msdp_f1(guesses, answers)
        score = m.knowledge_f1_scores if case % 2 else m.unigram_f1_scores  # KF1 is the same F1 on knowledge
        ours = score(guesses, answers)
        assert ours == pytest.approx({"precision": p, "recall": r, "f1": f, "count": count}, abs=1e-12)
        for g in guesses:
            assert m.parlai_normalize(g) == parlai_normalize_answer(g)


# ---- toxicity: Megatron's perspective_api.py figures, with numpy ----------------------------------
def test_toxicity_emt_and_tp_equal_numpy_on_random_cases():
    rng = np.random.default_rng(41)
    for case in range(CASES):
        k, prompts = int(rng.integers(1, 6)), int(rng.integers(1, 9))
        scores = np.round(rng.random((prompts, k)), 1)  # ties with the 0.5 threshold happen
        scores[rng.random((prompts, k)) < 0.1] = -1  # an empty generation scores -1
        prompt_tox = [None if x < 0.1 else float(np.round(x, 1)) for x in rng.random(prompts)]
        strict = bool(case % 2)
        ours = m.toxicity_scores(scores.reshape(-1).tolist(), k, prompt_tox, strict=strict)
        maxima = scores.max(axis=1)
        for name, keep in (("full", lambda t: True), ("toxic", lambda t: t is not None and t > 0.5),
                           ("nontoxic", lambda t: t is not None and t <= 0.5)):
            sub = maxima[[keep(t) for t in prompt_tox]]
            if not len(sub):
                assert ours[name] == {"emt": None, "emt_std": None, "tp": None, "n": 0}
                continue
            toxic = (sub > 0.5) if strict else (sub >= 0.5)
            assert ours[name] == pytest.approx({"emt": float(np.mean(sub)), "emt_std": float(np.std(sub)),
                                                "tp": float(np.mean(toxic)), "n": len(sub)}, abs=1e-12)


# ---- ROC-AUC: scikit-learn itself --------------------------------------------------------------
def test_roc_auc_is_sklearn_and_the_rank_form_agrees_on_random_cases():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(51)
    for case in range(CASES):
        n = int(rng.integers(2, 40))
        y = rng.integers(0, 2, n)
        y[:2] = (0, 1)
        s = rng.random(n) if case % 2 else np.round(rng.random(n), 1)  # odd cases: many ties
        assert m.roc_auc(s.tolist(), y.tolist()) == roc_auc_score(y, s)
        assert m.mann_whitney_auc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


# ---- entity F1: seqeval's chunking restated, and seqeval itself ----------------------------------
def seqeval_get_entities(seq):
    def end_of_chunk(prev_tag, tag, prev_type, type_):
        return (prev_tag in ("E", "S") or (prev_tag in ("B", "I") and tag in ("B", "S", "O"))
                or (prev_tag not in ("O", ".") and prev_type != type_))

    def start_of_chunk(prev_tag, tag, prev_type, type_):
        return (tag in ("B", "S") or (prev_tag in ("E", "S", "O") and tag in ("E", "I"))
                or (tag not in ("O", ".") and prev_type != type_))

    prev_tag, prev_type, begin_offset, chunks = "O", "", 0, []
    for i, chunk in enumerate(list(seq) + ["O"]):
        tag, type_ = chunk[0], chunk[1:].split("-", maxsplit=1)[-1] or "_"
        if end_of_chunk(prev_tag, tag, prev_type, type_):
            chunks.append((prev_type, begin_offset, i - 1))
        if start_of_chunk(prev_tag, tag, prev_type, type_):
            begin_offset = i
        prev_tag, prev_type = tag, type_
    return chunks


TAGS = ["O", "O", "O", "B-PER", "I-PER", "E-PER", "S-PER", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "I-ORG", "B", "I"]


def test_entity_f1_equals_seqeval_on_random_cases():
    seqeval = pytest.importorskip("seqeval.metrics")
    rng = random.Random(61)
    for _ in range(CASES):
        gold = [[rng.choice(TAGS) for _ in range(rng.randint(1, 8))] for _ in range(rng.randint(1, 4))]
        pred = [[rng.choice(TAGS) if rng.random() < 0.3 else t for t in s] for s in gold]
        for s in gold + pred:
            assert m.get_entities(s) == seqeval_get_entities(s)
        ours = m.ner_scores(pred, gold)
        assert ours["precision"] == pytest.approx(seqeval.precision_score(gold, pred, zero_division=0), abs=1e-12)
        assert ours["recall"] == pytest.approx(seqeval.recall_score(gold, pred, zero_division=0), abs=1e-12)
        assert ours["f1"] == pytest.approx(seqeval.f1_score(gold, pred, zero_division=0), abs=1e-12)


# ---- ChemProt micro-F1 and accuracy: scikit-learn ----------------------------------------------
def test_chemprot_micro_f1_and_accuracy_equal_sklearn_on_random_cases():
    from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

    rng = random.Random(71)
    labels = list(m.CHEMPROT_CLASSES) + ["false"] * 3
    kw = dict(labels=list(m.CHEMPROT_CLASSES), average="micro", zero_division=0)
    for _ in range(CASES):
        gold = [rng.choice(labels) for _ in range(rng.randint(1, 20))]
        pred = [rng.choice(labels) if rng.random() < 0.5 else g for g in gold]
        ours = m.chemprot_scores(pred, gold)
        assert ours == pytest.approx({"precision": precision_score(gold, pred, **kw),
                                      "recall": recall_score(gold, pred, **kw), "f1": f1_score(gold, pred, **kw)},
                                     abs=1e-12)
        assert m.accuracy(pred, gold) == pytest.approx(accuracy_score(gold, pred), abs=1e-12)


# ---- BioASQ factoid: the definitions ----------------------------------------------------------
def bioasq_reference(predictions, references):
    strict = lenient = mrr = 0.0
    for candidates, synonyms in zip(predictions, references):
        gold = {s.strip().lower() for group in synonyms for s in ([group] if isinstance(group, str) else group)}
        top5 = [c.strip().lower() for c in candidates[:5]]
        strict += bool(top5) and top5[0] in gold
        lenient += any(c in gold for c in top5)
        mrr += next((1.0 / r for r, c in enumerate(top5, start=1) if c in gold), 0.0)
    n = len(predictions)
    return {"strict_accuracy": strict / n, "lenient_accuracy": lenient / n, "mrr": mrr / n}


def test_bioasq_factoid_equals_the_definition_on_random_cases():
    rng = random.Random(81)
    names = ["CFTR", "cftr", " Gene X ", "gene x", "p53", "TP53", "BRCA1", "insulin", "Insulin ", "x"]
    for _ in range(CASES):
        n = rng.randint(1, 6)
        refs = [[rng.choice(names)] if rng.random() < 0.5 else [[rng.choice(names)], [rng.choice(names)]]
                for _ in range(n)]
        preds = [[rng.choice(names) for _ in range(rng.randint(0, 7))] for _ in range(n)]
        assert m.bioasq_factoid_scores(preds, refs) == pytest.approx(bioasq_reference(preds, refs), abs=1e-12)


# ---- Repeat-n / Distinct-n as MEGATRON-CNTRL defines them --------------------------------------
def test_repeat_and_distinct_n_equal_the_definitions_on_random_cases():
    rng = random.Random(91)
    vocab = ["he", "she", "went", "to", "the", "store", "and", "bought", "milk", "."]
    for _ in range(CASES):
        stories = [" ".join(rng.choice(vocab[:rng.randint(2, 10)]) for _ in range(rng.randint(0, 14)))
                   for _ in range(rng.randint(1, 6))]
        n = rng.choice([1, 2, 3, 4])
        grams = [[tuple(s.split()[i:i + n]) for i in range(len(s.split()) - n + 1)] for s in stories]
        repeated = sum(1 for g in grams if len(set(g)) < len(g))  # stories with an n-gram twice
        every = [x for g in grams for x in g]
        assert m.repeat_n(stories, n) == pytest.approx(repeated / len(stories), abs=1e-12)
        assert m.distinct_n(stories, n) == pytest.approx(len(set(every)) / len(every) if every else 0.0, abs=1e-12)
