"""The ranker's training data with weak labels (the paper: sentence-embedding similarity between
each knowledge sentence and the gold next sentence; USE there, all-MiniLM-L6-v2 here through the
embedding API, zoo/embed.py).

For each step t of a story: the knowledge retrieved for the gold sentence's keywords, topped up to
`candidates` sentences with knowledge of other stories' keywords (distractors), in a seeded order;
the label is the candidate whose embedding is closest (cosine) to the gold sentence t+1. One JSON
line per step: {"id", "step", "context": [sentences 1..t], "candidates": [...], "label": i,
"similarity": [...]}.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from megazoo.core.data.errors import DataError
from megazoo.core.fs import write_text_atomic
from megazoo.tasks.story.keywords import story_keywords


def ranker_steps(stories, kb, candidates: int = 4, n_keywords: int = 2, seed: int = 0,
                 extractor: str = "rake") -> list[dict]:
    """Unlabelled steps: context, gold next sentence and `candidates` knowledge sentences (the knowledge
    of the gold sentence's keywords by `extractor`, rake | yake)."""
    rng = random.Random(seed)
    steps = []
    for story in stories:
        words = story_keywords(story.sentences, n_keywords, extractor)
        for t in range(1, len(story.sentences)):
            steps.append({"id": story.id, "step": t, "context": story.sentences[:t], "gold": story.sentences[t],
                          "candidates": kb.retrieve(words[t], candidates)})
    pool = sorted({c for s in steps for c in s["candidates"]})
    if len(pool) < candidates:
        raise DataError(f"the knowledge base gives {len(pool)} distinct sentences for these stories; a ranker step "
                        f"needs {candidates} candidates")
    for s in steps:
        while len(s["candidates"]) < candidates:
            extra = rng.choice(pool)
            if extra not in s["candidates"]:
                s["candidates"].append(extra)
        rng.shuffle(s["candidates"])
    return steps


def label_steps(steps: list[dict], embed) -> list[dict]:
    """Weak labels: `embed(texts)` gives L2-normalised vectors [N, h]."""
    golds = embed([s["gold"] for s in steps])
    flat = embed([c for s in steps for c in s["candidates"]])
    out, i = [], 0
    for s, g in zip(steps, golds):
        k = len(s["candidates"])
        sims = [float(x) for x in flat[i:i + k] @ g]
        i += k
        out.append({**{key: s[key] for key in ("id", "step", "context", "candidates")},
                    "label": max(range(k), key=lambda j: sims[j]), "similarity": [round(x, 5) for x in sims]})
    return out


def minilm_embed(checkpoint):
    """embed(texts) -> normalised mean-pooled vectors of an encoder checkpoint (MiniLM's recipe)."""
    from megazoo.zoo.embed import Embedder

    emb = Embedder(checkpoint)
    return lambda texts: emb.encode(texts, pooling="mean", normalize=True)


def write_jsonl(path, rows: list[dict]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_ranker_jsonl(path) -> list[dict]:
    """Labelled steps; a line in a wrong shape is an error `file:line: problem`."""
    from megazoo.tasks.story.data import read_records

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file (`megazoo task story label` writes the ranker's JSONL)")
    return [row for _, row in read_records(path, _labelled_step, 'expected {"context": [...], "candidates": [>= 2 '
                                           'sentences], "label": index of a candidate}', "no ranker steps in the file")]


def _labelled_step(row) -> bool:
    return (isinstance(row["context"], list) and isinstance(row["candidates"], list) and len(row["candidates"]) >= 2
            and 0 <= int(row["label"]) < len(row["candidates"]))
