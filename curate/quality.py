"""A quality classifier in the GPT-3 / MT-NLG manner: a linear model on hashed word n-gram features,
trained to tell a reference ("high quality") set from the crawl being curated, then used to score
every crawl document (the probability of "reference-like").

Features: scikit-learn's HashingVectorizer (word 1- and 2-grams, 2**18 buckets, lowercase, l2
norm) - stateless, so every Dask worker featurises the same way without a shared vocabulary. Model:
LogisticRegression. The training crawl sample is the first `max_train` documents of the input in
shard order (deterministic); the fitted model is saved in the stage folder (`_quality_model.pkl`)
and reused when a run resumes.

The score is a balanced classifier's probability of "reference", so a crawl that is mostly good
text scores around or below 0.5 even where it is clean: read the score histogram in the report
(`score_histogram`, bins of 0.05) and set the threshold from it.

Keeping: `mode: threshold` keeps score >= `threshold`; `mode: pareto` keeps a document when
`pareto(alpha) > 1 - score` (GPT-3, appendix A, alpha = 9), which keeps most high scores and some
low ones so the corpus does not collapse onto the reference's style. The draw is seeded by the
document's id, so the Dask and single-process paths keep the same documents.
"""

from __future__ import annotations

import pickle
import zlib
from pathlib import Path

from megazoo.curate.errors import CurateError

QUALITY_DEFAULTS = {"reference": None, "mode": "threshold", "threshold": 0.5, "alpha": 9.0,
                    "max_train": 20000, "seed": 0}


def featurizer():
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(ngram_range=(1, 2), n_features=2 ** 18, alternate_sign=False, norm="l2",
                             lowercase=True)


def train(reference: list[str], crawl: list[str], seed: int = 0):
    """A fitted LogisticRegression: reference texts are class 1, crawl texts class 0."""
    from sklearn.linear_model import LogisticRegression

    if not reference or not crawl:
        raise CurateError(f"quality: training needs reference and crawl documents "
                          f"(got {len(reference)} reference, {len(crawl)} crawl)")
    features = featurizer().transform(reference + crawl)
    labels = [1] * len(reference) + [0] * len(crawl)
    model = LogisticRegression(C=1.0, max_iter=2000, class_weight="balanced", random_state=seed)
    model.fit(features, labels)
    return model


def score(model, texts: list[str]):
    """P(reference-like) of each text."""
    if not texts:
        return []
    return model.predict_proba(featurizer().transform(texts))[:, 1].tolist()


def pareto_keep(doc_id: str, value: float, alpha: float, seed: int) -> bool:
    import numpy as np

    rng = np.random.default_rng([zlib.crc32(doc_id.encode("utf-8")), seed])
    return bool(rng.pareto(alpha) > 1.0 - value)


def quality_shard(docs: list[dict], params: dict) -> tuple[list[dict], list[dict], dict]:
    """The quality stage on one shard: score, keep by rule, record the score on survivors."""
    key, cfg, model = params["text_key"], params["config"], params["model"]
    kept, removed = [], []
    histogram: dict[str, int] = {}
    for doc, value in zip(docs, score(model, [d[key] for d in docs])):
        bin_ = f"{min(int(value * 20), 19) / 20:.2f}"
        histogram[bin_] = histogram.get(bin_, 0) + 1
        if cfg["mode"] == "pareto":
            keep = pareto_keep(doc["id"], value, cfg["alpha"], cfg["seed"])
            why = f"quality: score {value:.3f} not kept by pareto(alpha={cfg['alpha']:g})"
        else:
            keep = value >= cfg["threshold"]
            why = f"quality: score {value:.3f} < {cfg['threshold']:g}"
        if keep:
            kept.append({**doc, "quality_score": round(value, 4)})
        else:
            removed.append({"id": doc["id"], "stage": "quality", "reason": why})
    return kept, removed, {"score_histogram": histogram}


def check_config(cfg: dict, where: str = "quality") -> dict:
    from megazoo.curate.settings import check_keys, number

    check_keys(where, cfg, QUALITY_DEFAULTS)
    cfg = {**QUALITY_DEFAULTS, **cfg}
    if cfg["mode"] not in ("threshold", "pareto"):
        raise CurateError(f"{where}.mode: {cfg['mode']!r}; use threshold or pareto")
    cfg["threshold"] = number(f"{where}.threshold", cfg["threshold"], 0, 1)
    cfg["alpha"] = number(f"{where}.alpha", cfg["alpha"], 0, 1000, open_lo=True)
    # the classifier trains on max_train reference and max_train crawl texts held in memory
    cfg["max_train"] = number(f"{where}.max_train", cfg["max_train"], 1, 10**6, whole=True)
    cfg["seed"] = number(f"{where}.seed", cfg["seed"], 0, 2**32 - 1, whole=True)
    if not cfg["reference"]:
        raise CurateError(f"{where}.reference: not set; give a folder or file of high-quality reference "
                          "documents (.jsonl/.txt/.parquet) to train the classifier against the crawl")
    if not isinstance(cfg["reference"], str):
        raise CurateError(f"{where}.reference: {cfg['reference']!r}; give the path of a folder or file")
    return cfg


def load_or_train(cfg: dict, in_dir, out_dir, text_key: str):
    """The stage's model: the saved one when resuming, else trained now and saved."""
    from megazoo.core.fs import write_bytes_atomic
    from megazoo.curate.shards import list_shards, read_shard

    path = Path(out_dir) / "_quality_model.pkl"
    if path.is_file():
        return pickle.loads(path.read_bytes())
    ref = Path(cfg["reference"])
    if ref.is_file():
        reference = [d[text_key] for d in read_shard(ref.parent, ref.name, text_key)]
    else:
        reference = [d[text_key] for rel in list_shards(ref) for d in read_shard(ref, rel, text_key)]
    crawl = []
    for rel in list_shards(in_dir):
        crawl += [d[text_key] for d in read_shard(in_dir, rel, text_key)]
        if len(crawl) >= cfg["max_train"]:
            break
    model = train(reference[: cfg["max_train"]], crawl[: cfg["max_train"]], cfg["seed"])
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, pickle.dumps(model))
    return model
