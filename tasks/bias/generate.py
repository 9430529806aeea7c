"""The offline SBIC-format set: hand-written posts (sbic/posts.yaml) with per-annotator rows.

No SBIC data exists offline, so the project ships posts written for it: friendly, neutral or
complaining posts that are not offensive, and posts that are offensive only as insults or crude
language aimed at one person (nothing targets a group). `generate_sbic(out)` writes

    SBIC.v2.trn.csv   the support repository      (one row per annotation, SBIC v2 columns)
    SBIC.v2.dev.csv   threshold tuning
    SBIC.v2.tst.csv   the test posts
    SBIC.v2.agg.{trn,dev,tst}.csv   the per-post aggregates (means over annotators)

Each post gets three annotators whose votes are drawn (seeded) around the written label: a clear
post gets unanimous votes, some get a dissenting 0.5 or a full dissent, never enough to flip the
label (a post's mean stays on its side of 0.5). Every topic is split across the three files
(per topic and class: 40% test, one post to dev when the topic has five or more, the rest support),
so a test post has support posts on its topic, of both classes. The copies shipped in sbic/ come
from `generate_sbic(..., seed=0)`.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import yaml

from megazoo.tasks.bias.data import write_annotations

POSTS = Path(__file__).with_name("sbic") / "posts.yaml"
SPLITS = {"trn": "support", "dev": "dev", "tst": "test"}
GENDERS = ("woman", "man", "nonbinary")
POLITICS = ("liberal", "moderate liberal", "moderate", "moderate conservative", "conservative")
RACES = ("white", "asian", "hispanic", "black", "other")


def read_posts(path=POSTS) -> dict[str, dict[str, list[str]]]:
    """{topic: {"ok": [...], "offensive": [...]}} from the hand-written YAML."""
    return yaml.safe_load(Path(path).read_text())


def _votes(rng: random.Random, offensive: bool) -> list[float]:
    """Three annotators' values: the written label, with at most one dissent that cannot flip it."""
    base = 1.0 if offensive else 0.0
    votes = [base, base, base]
    r = rng.random()
    if r < 0.25:
        votes[rng.randrange(3)] = 0.5
    elif r < 0.35:
        votes[rng.randrange(3)] = 1.0 - base
    return votes


def _rows(post: str, offensive: bool, hit: str, rng: random.Random, workers: list[str]) -> list[dict]:
    rows = []
    for worker, vote in zip(rng.sample(workers, 3), _votes(rng, offensive)):
        said_offensive = vote >= 0.5
        rows.append({
            "post": post, "offensiveYN": f"{vote:.1f}",
            "intentYN": f"{vote:.1f}" if said_offensive else "0.0", "sexYN": "0.0", "sexReason": "", "sexPhrase": "",
            # the target questions are asked only of annotators who found the post offensive
            "whoTarget": "0.0" if said_offensive else "", "speakerMinorityYN": "0.0" if said_offensive else "",
            "targetMinority": "", "targetCategory": "", "targetStereotype": "",
            "WorkerId": worker, "HITId": hit, "annotatorGender": rng.choice(GENDERS), "annotatorMinority": "",
            "annotatorPolitics": rng.choice(POLITICS), "annotatorRace": rng.choice(RACES),
            "annotatorAge": str(rng.randint(21, 64)), "dataSource": "megazoo/handwritten"})
    return rows


def _split(items: list[str], rng: random.Random) -> dict[str, list[str]]:
    items = list(items)
    rng.shuffle(items)
    n_test = math.ceil(0.4 * len(items))
    n_dev = 1 if len(items) >= 5 else 0
    return {"tst": items[:n_test], "dev": items[n_test:n_test + n_dev], "trn": items[n_test + n_dev:]}


def _aggregate(rows: list[dict]) -> list[dict]:
    by_post: dict[str, list[dict]] = {}
    for r in rows:
        by_post.setdefault(r["post"], []).append(r)
    out = []
    for post, rs in by_post.items():
        agg = {"post": post, "dataSource": rs[0]["dataSource"]}
        for col in ("offensiveYN", "intentYN", "sexYN", "whoTarget", "speakerMinorityYN"):
            vals = [float(r[col]) for r in rs if r[col] != ""]
            agg[col] = f"{sum(vals) / len(vals):.4f}" if vals else ""
        out.append(agg)
    return out


def generate_sbic(out, seed: int = 0, posts_path=POSTS) -> dict[str, dict[str, int]]:
    """Write the set into `out`; returns {split: {"posts", "offensive", "rows"}}."""
    import csv

    rng = random.Random(seed)
    topics = read_posts(posts_path)
    workers = [f"w{i:02d}" for i in range(12)]
    rows = {s: [] for s in SPLITS}
    counts = {s: {"posts": 0, "offensive": 0, "rows": 0} for s in SPLITS}
    hit = 0
    for topic in topics:
        for kind in ("ok", "offensive"):
            for split, posts in _split(topics[topic].get(kind) or [], rng).items():
                for post in posts:
                    hit += 1
                    new = _rows(post, kind == "offensive", f"h{hit:04d}", rng, workers)
                    rows[split].extend(new)
                    counts[split]["posts"] += 1
                    counts[split]["offensive"] += kind == "offensive"
                    counts[split]["rows"] += len(new)
    out = Path(out)
    for split in SPLITS:
        order = list(range(len(rows[split]) // 3))
        rng.shuffle(order)  # posts in a random order, each post's rows together
        ordered = [r for i in order for r in rows[split][3 * i: 3 * i + 3]]
        write_annotations(out / f"SBIC.v2.{split}.csv", ordered)
        agg = _aggregate(ordered)
        with open(out / f"SBIC.v2.agg.{split}.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(agg[0]), quoting=csv.QUOTE_ALL)
            writer.writeheader()
            writer.writerows(agg)
    return counts


def shipped_dir() -> Path:
    """The folder of the shipped copy (SBIC.v2.{trn,dev,tst}.csv and the aggregates)."""
    return Path(__file__).with_name("sbic")
