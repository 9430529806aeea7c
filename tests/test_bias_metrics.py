"""The bias task's metrics (ROC-AUC of eval.metrics against scikit-learn and the Mann-Whitney count,
the threshold metrics, the dev-tuned threshold, bootstrap intervals) and the exemplar selection rules."""

from fractions import Fraction

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score, roc_auc_score

from megazoo.eval.metrics import mann_whitney_auc, roc_auc
from megazoo.tasks.bias.evaluate import bootstrap_ci, summarise, threshold_metrics, tune_threshold
from megazoo.tasks.bias.prompts import load_template
from megazoo.tasks.bias.selection import SelectionError, check_support, select


def _cases():
    for seed in range(16):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(4, 60))
        y = rng.integers(0, 2, n)
        y[0], y[1] = 0, 1
        s = rng.random(n) if seed % 2 else np.round(rng.random(n), 1)  # even seeds: many ties
        yield y, s


def test_auc_equals_sklearn_exactly_and_the_pair_count():
    for y, s in _cases():
        assert roc_auc(s, y) == roc_auc_score(y, s)
        pairs = sum(Fraction(1) if a > b else Fraction(1, 2) if a == b else Fraction(0)
                    for a in s[y == 1] for b in s[y == 0])
        exact = pairs / (int(y.sum()) * int((1 - y).sum()))
        assert mann_whitney_auc(s, y) == float(exact)  # correctly rounded
        assert abs(roc_auc(s, y) - float(exact)) <= 1e-15
    assert roc_auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    with pytest.raises(ValueError, match="needs both positive and negative references; all 2 are positive"):
        roc_auc([0.2, 0.3], [1, 1])


def test_threshold_metrics_equal_sklearn():
    for y, s in _cases():
        for t in (0.5, 0.3):
            pred = (s >= t).astype(int)
            got = threshold_metrics(y, s, t)
            assert got["accuracy"] == pytest.approx(accuracy_score(y, pred), abs=1e-12)
            assert got["precision"] == pytest.approx(precision_score(y, pred, zero_division=0), abs=1e-12)
            assert got["recall"] == pytest.approx(recall_score(y, pred, zero_division=0), abs=1e-12)
            assert got["f1"] == pytest.approx(f1_score(y, pred, zero_division=0), abs=1e-12)


def test_tuned_threshold_and_bootstrap():
    y = [0, 0, 0, 1, 1, 1]
    s = [0.01, 0.02, 0.05, 0.04, 0.08, 0.09]  # all below 0.5: F1 0 there
    t = tune_threshold(y, s)
    assert 0.02 < t <= 0.04 and threshold_metrics(y, s, t)["f1"] == pytest.approx(0.857142857, abs=1e-6)
    out = summarise(y, s, threshold=t, samples=200, seed=3)
    assert out["metrics"]["f1"] == 0.0 and out["metrics"]["f1_tuned"] > 0.8
    lo, hi = out["ci"]["auc"]
    assert lo <= out["metrics"]["auc"] <= hi and out == summarise(y, s, threshold=t, samples=200, seed=3)
    assert bootstrap_ci([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8], samples=50) == [1.0, 1.0]


def test_prompt_layout():
    t = load_template("offensive")
    p = t.prompt("query post", [("calm post", 0), ("rude post", 1)])
    assert p.startswith("Read each post") and p.endswith("Post: query post\nQuestion: Is this post offensive?\nAnswer:")
    assert "Post: calm post\nQuestion: Is this post offensive?\nAnswer: No\n\nPost: rude post" in p
    assert "Answer: Yes\n\nPost: query post" in p
    assert "because of their gender or sexuality?" in load_template("group:gender").question


def test_knn_is_class_balanced_nearest_first_and_excludes_the_query():
    support = np.eye(6, dtype=np.float32)  # post i points along axis i
    labels = [0, 0, 0, 1, 1, 1]
    query = np.array([[0.9, 0.5, 0.0, 0.3, 0.0, 0.6]], dtype=np.float32)
    (chosen,) = select(query, support, labels, 4, "knn")
    assert sorted(chosen) == [0, 1, 3, 5] and chosen[-1] == 0  # two per class; the most similar sits last
    (odd,) = select(query, support, labels, 3, "knn")
    assert sorted(odd) == [0, 1, 5]  # the extra one from the class of the nearest post (0)
    (without_self,) = select(query, support, labels, 2, "knn", exclude=[0])
    assert sorted(without_self) == [1, 5]


def test_random_and_fixed_ablations():
    labels = [0] * 10 + [1] * 10
    rnd = select(None, None, labels, 4, "random", seed=1, exclude=[None] * 5)
    assert all(sum(labels[i] for i in c) == 2 and len(set(c)) == 4 for c in rnd)
    assert len({tuple(c) for c in rnd}) > 1  # drawn per query
    fixed = select(None, None, labels, 4, "fixed", seed=1, exclude=[None] * 5)
    assert len({tuple(c) for c in fixed}) == 1 and [labels[i] for i in fixed[0]] == [0, 1, 0, 1]


def test_support_that_cannot_give_balanced_exemplars_is_refused():
    with pytest.raises(SelectionError, match=r"^the support set has only negative posts \(3\); class-balanced "):
        check_support([0, 0, 0], 2)
    with pytest.raises(SelectionError, match=r"^--shots 8 is larger than the support set \(4 posts\)$"):
        check_support([0, 1, 0, 1], 8)
    with pytest.raises(SelectionError, match="needs 2 posts of each class; the support set has 1 positive"):
        check_support([0, 0, 0, 1], 4)
    check_support([0, 0, 0], 0)  # zero-shot needs no exemplars
