"""Toxicity scores cached by text hash: a JSON-lines file of {"key": sha256(scorer key, text), "score"},
appended to as scores arrive, so a rescoring (another filter fraction, the same generations scored
again, a Perspective run stopped by its quota) asks the scorer only for texts it has not seen."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def text_key(scorer_key: str, text: str) -> str:
    return hashlib.sha256(f"{scorer_key}\0{text}".encode()).hexdigest()


class ScoreCache:
    def __init__(self, path=None):
        self.path = Path(path) if path else None
        self.scores: dict[str, float] = {}
        if self.path is not None and self.path.exists():
            with open(self.path) as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                        self.scores[rec["key"]] = float(rec["score"])
                    except (ValueError, KeyError, TypeError):
                        continue  # a torn last line after a kill: that score is asked again

    def get(self, scorer_key: str, text: str) -> float | None:
        return self.scores.get(text_key(scorer_key, text))

    def put_many(self, scorer_key: str, scores: dict[str, float]) -> None:
        lines = []
        for text, score in scores.items():
            k = text_key(scorer_key, text)
            self.scores[k] = float(score)
            lines.append(json.dumps({"key": k, "score": float(score)}) + "\n")
        if self.path is not None and lines:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as f:
                f.write("".join(lines))
