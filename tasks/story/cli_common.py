"""What the stages share: the errors reported as one line with exit code 2, and the bounds of the
numeric flags (generous for real use, far below what would reach the allocator)."""

from __future__ import annotations

import sys
from pathlib import Path

MAX_SEED = 2**32 - 1
MAX_STORIES = 10_000_000  # ROCStories has ~100k stories
MAX_GENERATED = 1_000_000  # stories `data` makes from templates
MAX_KEYWORDS = 16  # keywords per sentence
MAX_CANDIDATES = 256  # knowledge sentences ranked per step
MAX_NEW_TOKENS = 1024  # one sentence
MAX_BATCH = 1024


def errors() -> tuple:
    from megazoo.core.checkpoint import CheckpointError

    return (ValueError, FileNotFoundError, CheckpointError)


def fail(prog: str, e: Exception) -> int:
    print(f"{prog}: error: {e}", file=sys.stderr)
    return 2


def need(path, flag: str, folder: bool = False) -> Path:
    p = Path(path)
    if not (p.is_dir() if folder else p.is_file()):
        raise FileNotFoundError(f"{flag} {path}: no such {'folder' if folder else 'file'}")
    return p


def package_file(name: str) -> Path:
    return Path(__file__).resolve().parent / name
