"""What the dialogue stages share: the errors they turn into one line and exit code 2, and the
bounds of their numeric flags (generous for real use, far below what would reach the allocator)."""

from __future__ import annotations

import sys

ERRORS = (ValueError, FileNotFoundError)

MAX_SEED = 2**32 - 1
MAX_NEW_TOKENS = 4096  # a response, or a knowledge sentence
MAX_BATCH = 1024  # prompts per generate call
MAX_ITEMS = 100_000_000  # --limit: samples or conversations (Wizard of Wikipedia has ~200k samples)
MAX_SHOTS = 256  # examples in one prompt
MAX_TURNS = 1000  # turns of history or of a speaker's reference
MAX_SENTENCES = 256  # knowledge sentences in one prompt


def fail(prog: str, e) -> int:
    from megazoo.core.train.user_errors import one_line

    print(f"{prog}: error: {one_line(str(e))}", file=sys.stderr)
    return 2
