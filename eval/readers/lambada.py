"""LAMBADA, the OpenAI detokenised ``lambada_test.jsonl`` (Paperno et al. 2016; Radford et al. 2019).

One JSON object per line, ``{"text": "..."}``; the target is the passage's last
whitespace-separated word. The split follows Megatron-LM's ``--strict-lambada``
(``tasks/zeroshot_gpt/datasets.py``): ``target = text.split()[-1]`` and
``context = text[:text.rfind(target)].strip()``; a scorer then tokenises ``context`` and
``" " + target`` and counts an example correct only if every target token is the greedy one.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, field, read_jsonl


@dataclass
class LambadaExample:
    text: str
    context: str
    target: str


def read_lambada(path: str | os.PathLike) -> list[LambadaExample]:
    """The examples of a LAMBADA jsonl file, in file order."""
    what = 'LAMBADA jsonl: one {"text": ...} object per line'
    examples = []
    for line, obj in read_jsonl(path, what):
        text = field(obj, "text", str, path, line)
        words = text.split()
        if len(words) < 2:
            raise ReaderError(path, line, "field 'text' needs a context and a last word to predict")
        target = words[-1]
        context = text[: text.rfind(target)].strip()
        examples.append(LambadaExample(text=text, context=context, target=target))
    return examples
