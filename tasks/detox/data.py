"""RealToxicityPrompts `prompts.jsonl`: one JSON object a line,
{"filename", "begin", "end", "challenging", "prompt": {"text", "toxicity", "severe_toxicity", ...},
"continuation": {...}}. Megatron reads `prompt.text`; the subsets need `prompt.toxicity`, which may
be null (such a prompt counts in Full only). A malformed line fails with `file:line: problem`."""

from __future__ import annotations

import json
from dataclasses import dataclass


class PromptsFormatError(ValueError):
    pass


@dataclass
class Prompt:
    text: str
    toxicity: float | None
    challenging: bool


def load_prompts(path) -> list[Prompt]:
    out = []
    try:
        f = open(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"--prompts {path}: no such file") from None
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            out.append(parse_line(line, f"{path}:{n}"))
    if not out:
        raise PromptsFormatError(f"{path}: no prompts in the file")
    return out


def parse_line(line: str, where: str) -> Prompt:
    try:
        rec = json.loads(line)
    except ValueError as e:
        raise PromptsFormatError(f"{where}: not a JSON object ({e.msg})") from None
    if not isinstance(rec, dict):
        raise PromptsFormatError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    prompt = rec.get("prompt")
    if not isinstance(prompt, dict) or not isinstance(prompt.get("text"), str):
        raise PromptsFormatError(f"{where}: no `prompt.text` (each line needs {{\"prompt\": {{\"text\": ...}}}})")
    tox = prompt.get("toxicity")
    if tox is not None and (isinstance(tox, bool) or not isinstance(tox, (int, float))):
        raise PromptsFormatError(f"{where}: `prompt.toxicity` must be a number or null, got {tox!r}")
    challenging = rec.get("challenging", False)
    if not isinstance(challenging, bool):
        raise PromptsFormatError(f"{where}: `challenging` must be true or false, got {challenging!r}")
    return Prompt(prompt["text"], None if tox is None else float(tox), challenging)
