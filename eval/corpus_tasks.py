"""Evaluation files in official formats generated from the embedded corpus (the standard library's
documentation), for tests and demos where the real task data is not available offline.

- LAMBADA format (OpenAI jsonl, {"text": ...}): passages whose last word already occurred in the
  passage, so a model that reads the context can predict it, as in LAMBADA's construction.
- HellaSwag format: the start of a passage, its true next words and three continuations taken from
  other documents.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

_WORD = re.compile(r"^[A-Za-z]{3,}$")


def _passages(documents: list[str], min_words: int, max_words: int) -> list[list[str]]:
    out = []
    for doc in documents:
        words = doc.split()
        for start in range(0, len(words) - min_words, max_words):
            out.append(words[start: start + max_words])
    return out


def make_lambada(documents: list[str], n: int, seed: int = 0, min_words: int = 30, max_words: int = 60) -> list[dict]:
    rng = random.Random(seed)
    examples = []
    passages = _passages(documents, min_words, max_words)
    rng.shuffle(passages)
    for words in passages:
        # end the passage at a word that already appeared earlier in it
        for end in range(len(words) - 1, min_words - 1, -1):
            w = words[end]
            if _WORD.match(w) and w in words[: end - 5]:
                examples.append({"text": " ".join(words[: end + 1])})
                break
        if len(examples) == n:
            break
    return examples


def make_hellaswag(documents: list[str], n: int, seed: int = 0, ctx_words: int = 24, end_words: int = 8) -> list[dict]:
    rng = random.Random(seed)
    passages = [p for p in _passages(documents, ctx_words + end_words, ctx_words + end_words)
                if len(p) == ctx_words + end_words]
    rng.shuffle(passages)
    examples = []
    for i, words in enumerate(passages[:n]):
        ctx = " ".join(words[:ctx_words])
        true_end = " ".join(words[ctx_words:])
        others = rng.sample([p for j, p in enumerate(passages) if j != i], 3)
        endings = [" ".join(o[ctx_words:]) for o in others]
        label = rng.randrange(4)
        endings.insert(label, true_end)
        examples.append({"ind": i, "activity_label": "Python documentation", "ctx_a": ctx, "ctx_b": "",
                         "ctx": ctx, "endings": endings, "label": label, "split": "val", "split_type": "indomain",
                         "source_id": f"stdlib-{i}"})
    return examples


def write_jsonl(rows: list[dict], path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def corpus_task_files(out_dir, n: int = 40, seed: int = 0) -> dict[str, Path]:
    """Write lambada.jsonl and hellaswag.jsonl from the embedded corpus; return their paths."""
    from megazoo.core.data.corpus import stdlib_documents

    docs = stdlib_documents()
    out_dir = Path(out_dir)
    return {"lambada": write_jsonl(make_lambada(docs, n, seed), out_dir / "lambada.jsonl"),
            "hellaswag": write_jsonl(make_hellaswag(docs, n, seed), out_dir / "hellaswag.jsonl")}
