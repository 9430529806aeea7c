"""What the stages share: the errors reported as one line with exit code 2."""

from __future__ import annotations

import sys
from pathlib import Path


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
