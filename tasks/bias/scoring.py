"""p(" Yes") against p(" No") after each prompt, through the evaluation harness, with a cache.

The score of a prompt is p(yes) / (p(yes) + p(no)) in [0, 1], the paper's normalised p(Yes).
Tokenisation is the harness's (`megazoo.eval.scoring.split_request`: the answer's leading space
joins the continuation as lm-eval does). When both answers are one token after the same context
(" Yes" / " No" for every tokenizer in the zoo) one forward pass per prompt reads both from the
next-token distribution (`LanguageModel.logprobs`, which any layout of a megazoo model serves:
tensor slices, pipeline stages; every rank calls it and gets the scores). Otherwise the full
continuations are scored with `megazoo.eval.scoring.loglikelihood_tokens`. Both give the same
numbers for one-token answers; the first costs half.

The cache is a JSON-lines file of {"key": sha256(model, prompt, answers), "yes": lp, "no": lp}:
a rerun (another metric, a larger study, a changed output file) only scores new prompts.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Sequence

import torch
from tqdm.auto import tqdm

from megazoo.core.verbosity import shows_progress
from megazoo.eval.scoring import loglikelihood_tokens, split_request


def normalised(lp_yes: float, lp_no: float) -> float:
    """p(yes) / (p(yes) + p(no)) from log-probabilities (a logistic of their difference)."""
    d = lp_no - lp_yes
    return 1.0 / (1.0 + math.exp(d)) if d < 700 else 0.0


class ScoreCache:
    """Log-probabilities by prompt hash, appended to a JSON-lines file (None: memory only)."""

    def __init__(self, path=None, model_key: str = "", write: bool = True):
        self.path = Path(path) if path else None
        self.write = write  # on a multi-rank layout every rank reads the file, rank 0 appends
        self.model_key = model_key
        self.entries: dict[str, tuple[float, float]] = {}
        self.cut = False  # the file's last line was cut short: the next append starts a new line
        if self.path is not None and self.path.is_file():
            data = self.path.read_bytes()
            self.cut = bool(data) and not data.endswith(b"\n")
            for number, line in enumerate(data.split(b"\n"), start=1):  # bytes: a bad line is skipped, not fatal
                if not line.strip():
                    continue
                if not line.startswith(b'{"key"'):  # a file of the user's, not a cache: appending would change it
                    raise ValueError(f"{self.path}:{number}: not a score cache line (the cache holds "
                                     f'{{"key", "yes", "no"}} lines); give a new --cache file')
                try:
                    e = json.loads(line)
                    self.entries[e["key"]] = (float(e["yes"]), float(e["no"]))
                except (ValueError, KeyError, TypeError):  # UnicodeDecodeError is a ValueError
                    continue  # a line cut short by an interrupted run: score that prompt again

    def key(self, prompt: str, yes: str, no: str) -> str:
        return hashlib.sha256("\0".join((self.model_key, prompt, yes, no)).encode("utf-8")).hexdigest()

    def add(self, items: list[tuple[str, float, float]]) -> None:
        for key, y, n in items:
            self.entries[key] = (y, n)
        if self.path is not None and items and self.write:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:  # appended: a resumable output (stage.py)
                if self.cut:
                    f.write("\n")
                    self.cut = False
                for key, y, n in items:
                    f.write(json.dumps({"key": key, "yes": y, "no": n}) + "\n")


def _next_token_logprobs(lm, contexts: list[list[int]], yes_id: int, no_id: int, batch_size: int,
                         progress: bool) -> list[tuple[float, float]]:
    """(log p(yes), log p(no)) at the position after each context: one forward pass per prompt."""
    out: list[tuple[float, float] | None] = [None] * len(contexts)
    inputs = [c[-lm.max_length:] for c in contexts]
    order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i]))  # longest first: less padding per batch
    for start in tqdm(range(0, len(order), batch_size), disable=not shows_progress(progress), desc="bias prompts"):
        idx = order[start:start + batch_size]
        width = max(len(inputs[i]) for i in idx)
        batch = torch.zeros(len(idx), width, dtype=torch.long)
        for row, i in enumerate(idx):
            batch[row, : len(inputs[i])] = torch.tensor(inputs[i])
        logprobs = lm.logprobs(batch).cpu()
        for row, i in enumerate(idx):
            last = logprobs[row, len(inputs[i]) - 1]
            out[i] = (float(last[yes_id]), float(last[no_id]))
    return out  # type: ignore[return-value]


def answer_logprobs(lm, prompts: Sequence[str], yes: str = " Yes", no: str = " No", batch_size: int = 8,
                    progress: bool = False, cache: ScoreCache | None = None) -> list[tuple[float, float]]:
    """(log p(yes | prompt), log p(no | prompt)) per prompt; cached prompts are not scored again."""
    cache = cache if cache is not None else ScoreCache()
    keys = [cache.key(p, yes, no) for p in prompts]
    todo = sorted({k: i for i, k in enumerate(keys) if k not in cache.entries}.values())
    if todo:
        requests = [(split_request(lm, prompts[i], yes), split_request(lm, prompts[i], no)) for i in todo]
        ids = {(tuple(ry[1]), tuple(rn[1])) for ry, rn in requests}
        single = len(ids) == 1 and all(ry[0] == rn[0] and len(ry[1]) == len(rn[1]) == 1 for ry, rn in requests)
        if single:
            scores = _next_token_logprobs(lm, [ry[0] for ry, _ in requests], requests[0][0][1][0],
                                          requests[0][1][1][0], batch_size, progress)
        else:  # multi-token answers: the harness's continuation log-likelihoods
            flat = [r for pair in requests for r in pair]
            lls = loglikelihood_tokens(lm, flat, batch_size, progress)
            scores = [(lls[2 * j][0], lls[2 * j + 1][0]) for j in range(len(todo))]
        cache.add([(keys[i], y, n) for i, (y, n) in zip(todo, scores)])
    return [cache.entries[k] for k in keys]


def score_prompts(lm, prompts: Sequence[str], yes: str = " Yes", no: str = " No", batch_size: int = 8,
                  progress: bool = False, cache: ScoreCache | None = None) -> list[float]:
    """The normalised p(yes) in [0, 1] of each prompt."""
    return [normalised(y, n) for y, n in answer_logprobs(lm, prompts, yes, no, batch_size, progress, cache)]
