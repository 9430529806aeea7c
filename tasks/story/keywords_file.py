"""The `sample --keywords FILE` format: JSONL, one line per story of the data file in its order,
either {"id": ..., "keywords": [[...], [...], [...], [...]]} (`data` adds "extractor": rake | yake, the
keyword extractor that made them; other keys are not read) or the bare list: four lists of keyword
strings, one for each generated sentence. A line in a wrong shape, or a file with a different number
of stories than the data, is an error `file:line: problem`."""

from __future__ import annotations

import json
from pathlib import Path

from megazoo.eval.readers.common import MissingFile
from megazoo.tasks.story.data import StoryDataError, read_utf8
from megazoo.tasks.story.inputs import STEPS


def read_keywords(path, n_stories: int, data_name: str = "the data") -> list[list[list[str]]]:
    path = Path(path)
    if not path.is_file():
        raise MissingFile(f"{path}: no such keywords file (JSONL, four lists of keywords per story)")
    lines = [(i, ln) for i, ln in enumerate(read_utf8(path).split("\n"), start=1) if ln.strip()]
    out = []
    for number, line in lines:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise StoryDataError(path, number, f"not valid JSON ({e.msg})") from None
        steps = obj.get("keywords") if isinstance(obj, dict) else obj
        if not (isinstance(steps, list) and len(steps) == STEPS and
                all(isinstance(s, list) and all(isinstance(w, str) for w in s) for s in steps)):
            raise StoryDataError(path, number, f"expected {STEPS} lists of keywords (one per generated sentence), "
                                               f"or {{\"keywords\": [...]}} holding them")
        if len(out) == n_stories:
            raise StoryDataError(path, number, f"more stories of keywords than the {n_stories} stories of {data_name}")
        out.append([[w.strip().lower() for w in s if w.strip()] for s in steps])
    if len(out) != n_stories:
        last = lines[-1][0] if lines else 1
        raise StoryDataError(path, last, f"{len(out)} stories of keywords for the {n_stories} stories of {data_name}")
    return out
