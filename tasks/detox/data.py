"""RealToxicityPrompts `prompts.jsonl`: one JSON object a line,
{"filename", "begin", "end", "challenging", "prompt": {"text", "toxicity", "severe_toxicity", ...},
"continuation": {...}}. Megatron reads `prompt.text`; the subsets need `prompt.toxicity`, which may
be null (such a prompt counts in Full only). A malformed line fails with `file:line: problem`. The file
is streamed a line at a time; a gzip is read directly."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from megazoo.eval.readers.common import LineError, read_jsonl


class PromptsFormatError(LineError):
    """A malformed prompts line: `file:line: problem`."""


@dataclass
class Prompt:
    text: str
    toxicity: float | None
    challenging: bool


def iter_prompts(path) -> Iterator[Prompt]:
    """The prompts of a prompts.jsonl (or its gzip), one line at a time (eval/readers/common.py read_jsonl):
    the real file has 99,442 lines, ~0.1 GB; a bad line raises when the stream reaches it. A Hugging Face
    dataset of the same columns is read by data_hf.py."""
    from megazoo.tasks.detox import data_hf  # allenai/real-toxicity-prompts as parquet/arrow/save_to_disk/hf:
    if data_hf.is_hf_source(path):
        yield from data_hf.iter_prompts_hf(path)
        return
    for n, rec in read_jsonl(path, "RealToxicityPrompts lines", PromptsFormatError):
        yield parse_record(rec, path, n)


def load_prompts(path) -> list[Prompt]:
    """All prompts of a prompts.jsonl (iter_prompts)."""
    return list(iter_prompts(path))


def parse_record(rec: dict, path, n: int) -> Prompt:
    prompt = rec.get("prompt")
    if not isinstance(prompt, dict) or not isinstance(prompt.get("text"), str):
        raise PromptsFormatError(path, n, "no `prompt.text` (each line needs {\"prompt\": {\"text\": ...}})")
    tox = prompt.get("toxicity")
    if tox is not None and (isinstance(tox, bool) or not isinstance(tox, (int, float))):
        raise PromptsFormatError(path, n, f"`prompt.toxicity` must be a number or null, got {tox!r}")
    challenging = rec.get("challenging", False)
    if not isinstance(challenging, bool):
        raise PromptsFormatError(path, n, f"`challenging` must be true or false, got {challenging!r}")
    return Prompt(prompt["text"], None if tox is None else float(tox), challenging)
