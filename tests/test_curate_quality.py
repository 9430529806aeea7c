"""megazoo curate: the quality classifier (hashed n-grams + logistic regression) ranks held-out
clean passages above generated low-quality text, and its keep rules (threshold, GPT-3's Pareto
draw seeded by the document id) are deterministic."""

import random

import pytest
from sklearn.metrics import roc_auc_score

from megazoo.curate import quality
from megazoo.curate.planted import low_quality, passages


@pytest.fixture(scope="module")
def texts():
    clean = passages(limit=60)
    vocab = sorted({w.lower().strip(".,;:()") for p in clean for w in p.split()} - {""})
    rng = random.Random(0)
    low = [low_quality(kind, vocab, rng) for kind in ("salad", "spam", "boilerplate") for _ in range(12)]
    return clean, low


def test_classifier_ranks_held_out_clean_above_low_quality(texts):
    clean, low = texts
    reference, crawl_clean, held_clean = clean[:20], clean[20:40], clean[40:]
    model = quality.train(reference, crawl_clean + low[0::2])
    scores = quality.score(model, held_clean + low[1::2])
    labels = [1] * len(held_clean) + [0] * len(low[1::2])
    assert roc_auc_score(labels, scores) >= 0.9


def test_keep_rules(texts):
    clean, low = texts
    model = quality.train(clean[:20], low[:12])
    docs = [{"id": f"d{i}", "text": t} for i, t in enumerate(clean[40:50] + low[12:22])]
    cfg = quality.check_config({"reference": "ref", "threshold": 0.5})
    kept, removed, extra = quality.quality_shard(docs, {"text_key": "text", "config": cfg, "model": model})
    assert len(kept) + len(removed) == len(docs) and sum(extra["score_histogram"].values()) == len(docs)
    assert all(d["quality_score"] >= 0.5 for d in kept) and all(r["reason"].startswith("quality: score") for r in removed)
    draws = [quality.pareto_keep("doc-1", 0.7, 9.0, 0) for _ in range(3)]
    assert len(set(draws)) == 1  # seeded by the id: the same answer in every process
    share = sum(quality.pareto_keep(f"doc-{i}", 0.95, 9.0, 0) for i in range(400)) / 400
    low_share = sum(quality.pareto_keep(f"doc-{i}", 0.2, 9.0, 0) for i in range(400)) / 400
    assert abs(share - 1.05 ** -9) < 0.08 and low_share < 0.02  # P(pareto(9) > 1 - s) = (2 - s) ** -9
    with pytest.raises(ValueError, match="quality.reference: not set"):
        quality.check_config({})
    with pytest.raises(ValueError, match="quality.mode"):
        quality.check_config({"reference": "r", "mode": "best"})
