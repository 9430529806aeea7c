"""BoolQ jsonl (Clark et al. 2019): yes/no questions about a Wikipedia passage.

The official files (``train.jsonl``, ``dev.jsonl``) hold one object per line with ``question``,
``passage``, ``title`` and the boolean ``answer``; the SuperGLUE copy names the answer ``label``
and adds ``idx``; both are read. The test files have no answer: pass ``require_labels=False``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from megazoo.eval.readers.common import ReaderError, field, read_jsonl


@dataclass
class BoolQExample:
    question: str
    passage: str
    answer: bool | None
    title: str = ""


def read_boolq(path: str | os.PathLike, require_labels: bool = True) -> list[BoolQExample]:
    """The examples of a BoolQ jsonl file, in file order."""
    what = "BoolQ jsonl: objects with question, passage and answer"
    examples = []
    for line, obj in read_jsonl(path, what):
        question = field(obj, "question", str, path, line)
        passage = field(obj, "passage", str, path, line)
        title = obj.get("title", "")
        answer = None
        if "answer" in obj:
            answer = field(obj, "answer", bool, path, line)
        elif "label" in obj:  # the SuperGLUE copy
            answer = field(obj, "label", bool, path, line)
        elif require_labels:
            raise ReaderError(path, line, "missing field 'answer' (pass require_labels=False for test files)")
        examples.append(BoolQExample(question=question, passage=passage, answer=answer, title=str(title)))
    return examples
