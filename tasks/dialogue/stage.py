"""What the dialogue stages share: the bounds of their numeric flags (generous for real use, far below
what would reach the allocator). A stage's user errors (ValueError, MissingFile) reach megazoo.cli's
boundary, which prints them in one line with exit code 2."""

from __future__ import annotations

MAX_SEED = 2**32 - 1
MAX_NEW_TOKENS = 4096  # a response, or a knowledge sentence
MAX_BATCH = 1024  # prompts per generate call
MAX_ITEMS = 100_000_000  # --limit: samples or conversations (Wizard of Wikipedia has ~200k samples)
MAX_SHOTS = 256  # examples in one prompt
MAX_TURNS = 1000  # turns of history or of a speaker's reference
MAX_SENTENCES = 256  # knowledge sentences in one prompt
