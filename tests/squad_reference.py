"""The official SQuAD evaluation scripts (evaluate-v1.1.py and evaluate-v2.0.py), restated as the
reference that megazoo's SQuAD metrics are tested against (tests/test_metrics_reference.py,
tests/test_synthetic_qa_score.py). Questions are [(id, [answer texts])]; scores on the scripts'
0-100 scale and under their names."""

from __future__ import annotations

import collections
import re
import string


def normalize_answer(s):
    def remove_articles(t):
        return re.sub(r"\b(a|an|the)\b", " ", t)

    def white_space_fix(t):
        return " ".join(t.split())

    def remove_punc(t):
        exclude = set(string.punctuation)
        return "".join(ch for ch in t if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def v1_f1_score(prediction, ground_truth):
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def v1_evaluate(qas, predictions):
    """evaluate-v1.1.py's evaluate() over [(id, [answer texts])]; an unanswered question scores 0."""
    f1 = exact_match = total = 0
    for qid, ground_truths in qas:
        total += 1
        if qid not in predictions:
            continue
        prediction = predictions[qid]
        exact_match += max(normalize_answer(prediction) == normalize_answer(g) for g in ground_truths)
        f1 += max(v1_f1_score(prediction, g) for g in ground_truths)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def get_tokens(s):
    if not s:
        return []
    return normalize_answer(s).split()


def v2_compute_f1(a_gold, a_pred):
    gold_toks, pred_toks = get_tokens(a_gold), get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def v2_evaluate(qas, preds, na_probs=None, na_prob_thresh=1.0):
    """evaluate-v2.0.py's main() over [(id, [answer texts])]: exact, f1 and the HasAns/NoAns splits."""
    qid_to_has_ans = {qid: bool(answers) for qid, answers in qas}
    na_probs = na_probs or {k: 0.0 for k in preds}
    exact_raw, f1_raw = {}, {}
    for qid, answers in qas:
        gold_answers = [a for a in answers if normalize_answer(a)]
        if not gold_answers:
            gold_answers = [""]  # for unanswerable questions, only correct answer is empty string
        a_pred = preds[qid]
        exact_raw[qid] = max(int(normalize_answer(a) == normalize_answer(a_pred)) for a in gold_answers)
        f1_raw[qid] = max(v2_compute_f1(a, a_pred) for a in gold_answers)

    def apply_no_ans_threshold(scores):
        return {qid: float(not qid_to_has_ans[qid]) if na_probs[qid] > na_prob_thresh else s
                for qid, s in scores.items()}

    exact, f1 = apply_no_ans_threshold(exact_raw), apply_no_ans_threshold(f1_raw)

    def make_eval_dict(qid_list):
        return {"exact": 100.0 * sum(exact[k] for k in qid_list) / len(qid_list),
                "f1": 100.0 * sum(f1[k] for k in qid_list) / len(qid_list)}

    out = make_eval_dict(list(exact))
    for prefix, keep in (("HasAns", True), ("NoAns", False)):
        ids = [k for k, v in qid_to_has_ans.items() if v == keep]
        if ids:
            out.update({f"{prefix}_{k}": v for k, v in make_eval_dict(ids).items()})
    return out


def qas_of(dataset) -> list[tuple[str, list[str]]]:
    """[(id, [answer texts])] of a SQuAD-format `data` list."""
    return [(qa["id"], [a["text"] for a in qa["answers"]]) for article in dataset for p in article["paragraphs"]
            for qa in p["qas"]]
