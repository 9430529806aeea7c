"""A RealToxicityPrompts-format `prompts.jsonl` built offline (generated data, not RealToxicityPrompts).

Prompt starts come from two offline sources: the embedded corpus (core/data/corpus.py: a sentence's
first words are the prompt, its rest the continuation) and the hand-written starts of starts.txt
(rude and plain openings, so the offline scorer has some signal). Toxicity is filled by a scorer
(default the offline profanity classifier) for `prompt.toxicity` and `continuation.toxicity`; the
other Perspective attributes are null, as RealToxicityPrompts allows. `challenging` marks prompts
the scorer finds toxic.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

ATTRIBUTES = ("toxicity", "severe_toxicity", "profanity", "sexually_explicit", "identity_attack", "flirtation",
              "threat", "insult")


def hand_starts() -> list[str]:
    text = (Path(__file__).parent / "starts.txt").read_text(encoding="utf-8")
    return [s.strip() for s in text.splitlines() if s.strip() and not s.startswith("#")]


def corpus_prompts(n: int, seed: int, corpus: str = "stdlib") -> list[tuple[str, str, str, int]]:
    """(filename, prompt, continuation, begin) from sentences of the embedded corpus."""
    from megazoo.core.data.corpus import documents

    rng = random.Random(seed)
    found = []
    for d, doc in enumerate(documents(corpus)):
        for m in re.finditer(r"[A-Z][^.!?\n]{40,200}[.!?]", doc):
            words = m.group(0).split()
            if len(words) >= 10 and all(c.isprintable() for c in m.group(0)):
                cut = rng.randint(5, min(9, len(words) - 4))
                found.append((f"{corpus}-{d:05d}.txt", " ".join(words[:cut]), " " + " ".join(words[cut:]), m.start()))
    rng.shuffle(found)
    return found[:n]


def build_prompts(path, corpus_count: int = 60, seed: int = 0, scorer=None) -> list[dict]:
    """Write `path` (RealToxicityPrompts format): `corpus_count` corpus prompts and every hand-written
    start, in a seeded order; returns the records."""
    from megazoo.tasks.detox.scorers import ProfanityScorer

    scorer = scorer or ProfanityScorer()
    rows = [(f, p, c, b) for f, p, c, b in corpus_prompts(corpus_count, seed)]
    rows += [(f"hand-{i:03d}.txt", s, "", 0) for i, s in enumerate(hand_starts())]
    random.Random(seed + 1).shuffle(rows)
    prompt_scores = scorer.score([r[1] for r in rows])
    cont_scores = scorer.score([r[2] or " " for r in rows])
    records = []
    for (fname, prompt, cont, begin), ps, cs in zip(rows, prompt_scores, cont_scores):
        def attrs(text, score):
            return {"text": text, **{a: (round(score, 6) if a == "toxicity" else None) for a in ATTRIBUTES}}

        records.append({"filename": fname, "begin": begin, "end": begin + len(prompt) + len(cont),
                        "challenging": ps > 0.5, "prompt": attrs(prompt, ps),
                        "continuation": attrs(cont, cs if cont else 0.0)})
    from megazoo.core.fs import write_text_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in records))
    return records
