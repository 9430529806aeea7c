"""What the stages share: the file checks, the derived output names and the bounds of their flags.

Errors are not caught here: they reach the one boundary (megazoo/cli.py), which turns a user's
mistake into one line with exit code 2 and a failure of the machine (a full disk) into exit 1.
"""

from __future__ import annotations

from pathlib import Path

from megazoo.core.argtypes import int_in

MAX_BATCH = 4096  # rows per forward pass
SEED = int_in(0, 2**32 - 1)
BATCH = int_in(1, MAX_BATCH)


def need_file(path, flag: str) -> Path:
    from megazoo.eval.readers.common import MissingFile
    from megazoo.eval.readers.hf_source import is_hf_source

    if is_hf_source(path):  # a Hugging Face dataset: its reader checks it (squad_hf.py)
        return path
    if not Path(path).is_file():
        raise MissingFile(f"{flag} {path}: no such file")
    return Path(path)


def counts_path(out) -> Path:
    """FILE.json -> FILE.counts.json: the counts a stage writes beside its output."""
    out = Path(out)
    return out.with_name(out.stem + ".counts.json")
