"""RealToxicityPrompts as a Hugging Face dataset (`allenai/real-toxicity-prompts`: parquet, arrow, a
save_to_disk folder or `hf:NAME@SPLIT`; eval/readers/hf_source.py): one row per prompt with the columns
of prompts.jsonl, {filename, begin, end, challenging, prompt: {text, toxicity, ...}, continuation: {...}}.
`prompt` is required, `challenging` read where present; the checks are data.parse_record's, and a
problem is `FILE: row N: problem`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from megazoo.eval.readers.hf_source import NumberedRows, RowError, is_hf_source
from megazoo.tasks.detox.data import Prompt, PromptsFormatError, parse_record

SCHEMA = ("the Hugging Face `allenai/real-toxicity-prompts` schema: prompt {text, toxicity, ...}, challenging, "
          "continuation")

__all__ = ["is_hf_source", "iter_prompts_hf"]


class PromptsRowError(RowError, PromptsFormatError):
    """A bad row of a RealToxicityPrompts dataset: `FILE: row N: problem`."""


def iter_prompts_hf(path: str | os.PathLike, split: str | None = None) -> Iterator[Prompt]:
    """The prompts of one split, in row order, one batch of rows in memory at a time."""
    rows = NumberedRows(path, ("prompt",), SCHEMA, optional=("challenging",), split=split, error=PromptsRowError)
    with rows.native_errors(PromptsFormatError):
        for n, row in rows:
            if row.get("challenging") is None:  # a null cell: as a line without the key
                row.pop("challenging", None)
            yield parse_record(row, rows.text, n)
