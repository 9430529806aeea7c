"""The stories a component trains on: data.path's train/valid CSVs (or one CSV split 90/5/5 with
the run's seed), delexicalised."""

from __future__ import annotations

from pathlib import Path

from megazoo.core.data.errors import DataError
from megazoo.tasks.story.data import read_rocstories, split_stories
from megazoo.tasks.story.delex import delexicalise


def load_split(path, seed: int = 0) -> tuple[list, list]:
    """(train, valid) delexicalised stories of a folder with train.csv and valid.csv, or of one CSV (or
    one split of a Hugging Face dataset with its columns, data_hf.py: split as one CSV is)."""
    from megazoo.eval.readers.hf_source import is_hf_source

    hf = is_hf_source(path)  # split as one CSV is
    path = path if hf else Path(path)
    if not hf and path.is_dir():
        files = [path / "train.csv", path / "valid.csv"]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise DataError(f"{path}: a story folder needs train.csv and valid.csv; missing {', '.join(missing)} "
                            f"(`megazoo task story data` writes them), or give one ROCStories CSV")
        train, valid = read_rocstories(files[0]), read_rocstories(files[1])
    elif hf or path.is_file():
        parts = split_stories(read_rocstories(path), seed)
        train, valid = parts["train"], parts["valid"]
    else:
        raise DataError(f"data.path={str(path)!r}: no such ROCStories CSV or folder")
    return [delexicalise(s) for s in train], [delexicalise(s) for s in valid]
