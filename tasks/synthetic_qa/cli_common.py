"""What the stages share: the errors they report as one line (exit code 2) and the file checks."""

from __future__ import annotations

import sys
from pathlib import Path


def errors() -> tuple:
    from megazoo.core.checkpoint import CheckpointError

    return (ValueError, FileNotFoundError, CheckpointError, OSError)


def fail(prog: str, e: Exception) -> int:
    print(f"{prog}: error: {e}", file=sys.stderr)
    return 2


def need_file(path, flag: str) -> Path:
    if not Path(path).is_file():
        raise FileNotFoundError(f"{flag} {path}: no such file")
    return Path(path)
