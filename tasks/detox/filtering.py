"""Keep the least toxic share of the self-generations and make them training data.

As Megatron's filter-selfgeneration.py: score every sample, sort by toxicity, keep the lowest
`fraction` (default 50%); empty samples are dropped first (they score -1 but hold no text). The kept
texts are written as JSON lines ({"text"}, in sample order) and preprocessed with an end-of-document
token after each (`megazoo preprocess --append-eod`) into PREFIX.bin/.idx for the trainer.
"""

from __future__ import annotations

import json
from pathlib import Path


def keep_least_toxic(records: list[dict], scores: list[float], fraction: float = 0.5) -> list[dict]:
    """The records of the `fraction` lowest scores (ties by position), in their original order."""
    if not 0 < fraction <= 1:
        raise ValueError(f"--fraction must be in (0, 1], got {fraction}")
    scored = [(s, i) for i, (r, s) in enumerate(zip(records, scores)) if r["text"].strip()]
    keep = max(1, int(len(scored) * fraction)) if scored else 0
    chosen = sorted(i for _, i in sorted(scored)[:keep])
    return [{**records[i], "score": scores[i]} for i in chosen]


def text_lines(records: list[dict], with_prompt: bool = False) -> str:
    """The kept samples as {"text", "id", "score"} lines; with_prompt: a prompted sample's text is
    its prompt followed by the continuation (the continuation alone was scored)."""
    lines = []
    for r in records:
        text = (r.get("prompt") or "") + r["text"] if with_prompt else r["text"]
        lines.append(json.dumps({"text": text, "id": r.get("id"), "score": r.get("score")}) + "\n")
    return "".join(lines)


def write_texts(path, records: list[dict], with_prompt: bool = False) -> Path:
    """text_lines written to `path` atomically."""
    from megazoo.core.fs import write_text_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text_lines(records, with_prompt))
    return path


def write_training_data(prefix, records: list[dict], tokenizer: str, with_prompt: bool = False):
    """PREFIX.jsonl (text_lines) and PREFIX.bin/.idx (to_indexed): the lines go to a temporary file
    of this process's own, the .bin/.idx are made from it (each written to a temporary name and
    moved into place at the end by the dataset writer), and the .jsonl is moved into place last, so
    a failure leaves the old three files as they were. Returns the preprocessing's counts."""
    from megazoo.core.fs import atomic_file

    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(prefix.with_name(prefix.name + ".jsonl"), "w") as f:
        f.write(text_lines(records, with_prompt))
        f.flush()
        stats = to_indexed(f.name, prefix, tokenizer)
    return stats


def to_indexed(jsonl, prefix, tokenizer: str):
    """`megazoo preprocess --input JSONL --output-prefix PREFIX --tokenizer T --append-eod`."""
    from megazoo.core.data.preprocess import preprocess

    Path(prefix).parent.mkdir(parents=True, exist_ok=True)
    return preprocess([str(jsonl)], tokenizer, str(prefix), append_eod=True, progress=False, fmt="jsonl")
