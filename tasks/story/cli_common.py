"""What the stages share: the bounds of the numeric flags (generous for real use, far below what
would reach the allocator) and the check that a named input is there. User errors are raised (one
line naming the flag and the path) and printed by megazoo/cli.py's boundary with exit code 2."""

from __future__ import annotations

from pathlib import Path

MAX_SEED = 2**32 - 1
MAX_STORIES = 10_000_000  # ROCStories has ~100k stories
MAX_GENERATED = 1_000_000  # stories `data` makes from templates
MAX_KEYWORDS = 16  # keywords per sentence
MAX_CANDIDATES = 256  # knowledge sentences ranked per step
MAX_NEW_TOKENS = 1024  # one sentence
MAX_BATCH = 1024


def need(path, flag: str, folder: bool = False) -> Path:
    """`path` as a Path; MissingFile (exit 2) naming `flag` when it is not an existing file (folder). A
    Hugging Face dataset (an `hf:` id, parquet/arrow, a save_to_disk folder) passes as a file: the
    readers take it (data_hf.py) and name its problems."""
    from megazoo.eval.readers.common import MissingFile
    from megazoo.eval.readers.hf_source import is_hf_source

    if not folder and is_hf_source(path):
        return path
    p = Path(path)
    if not (p.is_dir() if folder else p.is_file()):
        raise MissingFile(f"{flag} {path}: no such {'folder' if folder else 'file'}")
    return p


def package_file(name: str) -> Path:
    return Path(__file__).resolve().parent / name
