"""How much a command says: `-q/--quiet` and `-v/--verbose`, taken by every `megazoo` command
(megazoo/cli.py reads them anywhere before a `--`).

    quiet    no progress bars, no information lines; results, warnings and errors only
    normal   progress bars, the information lines, the summary at the end
    verbose  also a line per logged training step (loss, throughput, MFU) and what each stage read

The level travels in the environment (MEGAZOO_VERBOSITY: -1, 0 or 1), so the ranks and subprocesses a
command starts say as much as the command does; `verbosity(level)` sets it for one command and puts
the previous value back, so nothing outlives the command (a test calling main() twice sees no leak).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

QUIET, NORMAL, VERBOSE = -1, 0, 1
ENV = "MEGAZOO_VERBOSITY"
FLAGS = {"-q": QUIET, "--quiet": QUIET, "-v": VERBOSE, "--verbose": VERBOSE}


def level() -> int:
    try:
        return max(QUIET, min(VERBOSE, int(os.environ.get(ENV, "0"))))
    except ValueError:
        return NORMAL


def quiet() -> bool:
    return level() == QUIET


def verbose() -> bool:
    return level() == VERBOSE


def shows_progress(progress: bool = True) -> bool:
    """Whether a progress bar a caller wants is drawn: not under -q."""
    return bool(progress) and not quiet()


def split_flags(argv: list[str], keep_after: int | None = None) -> tuple[list[str], int | None]:
    """(argv without -q/--quiet/-v/--verbose, the level they ask for or None). Flags after `--` and
    after position `keep_after` (a command that hands its arguments to another program) stay."""
    out, chosen = [], None
    for i, word in enumerate(argv):
        stop = word == "--" or (keep_after is not None and i >= keep_after)
        if word in FLAGS and not stop and "--" not in argv[:i]:
            if chosen is not None and chosen != FLAGS[word]:
                raise ValueError("-q/--quiet and -v/--verbose together: give one of them")
            chosen = FLAGS[word]
            continue
        out.append(word)
    return out, chosen


@contextmanager
def verbosity(chosen: int | None):
    """Set the level for the duration of one command (None: leave it as the environment has it)."""
    if chosen is None:
        yield
        return
    before = os.environ.get(ENV)
    os.environ[ENV] = str(chosen)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before
