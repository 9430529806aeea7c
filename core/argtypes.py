"""Checked numeric types for command-line flags: `type=positive_int` and the like.

A value out of range is refused by argparse itself (usage line, `PROG: error: argument --flag: ...`,
exit 2) before the command does anything, so no command runs with `--nproc 0` or `--top-p 5`, and
no 0 is silently replaced by a default.
"""

from __future__ import annotations

import argparse
import math
import os


def _number(kind, text: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, got {text!r}") \
            from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    value = _number(int, text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer >= 0."""
    value = _number(int, text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _number(float, text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value:g}")
    return value


def probability(text: str) -> float:
    """A number in (0, 1] (e.g. nucleus sampling's top-p)."""
    value = _number(float, text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value:g}")
    return value


def _checked(kind, lo, hi, text: str):
    value = _number(kind, text)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "inf" if hi is None else f"{hi:g}"
        raise argparse.ArgumentTypeError(f"must be between {lo_s} and {hi_s}, got {value:g}")
    return value


def int_in(lo: int | None, hi: int | None):
    """An argparse type: an integer in [lo, hi] (None: unbounded on that side)."""
    def parse(text: str) -> int:
        return _checked(int, lo, hi, text)
    parse.__name__ = "int"  # argparse names the type in its messages; the contract tests read it
    parse.bounds = (lo, hi)  # the fuzzer (tests/fuzz_cli.py) tries values at and beyond them
    return parse


def float_in(lo: float | None, hi: float | None):
    """An argparse type: a finite number in [lo, hi] (None: unbounded on that side)."""
    def parse(text: str) -> float:
        return _checked(float, lo, hi, text)
    parse.__name__ = "float"
    parse.bounds = (lo, hi)
    return parse


def available_memory() -> int:
    """Bytes of memory available to a new allocation (MemAvailable; a large figure where unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 50


def check_fits(nbytes: float, what: str, fix: str) -> None:
    """Refuse (ValueError) an allocation of `nbytes` that this machine's free memory cannot hold,
    before it is made: `what` needs X GiB, Y GiB are available; `fix`."""
    free = available_memory()
    if nbytes > free:
        raise ValueError(f"{what} needs {nbytes / 2**30:.1f} GiB of memory and {free / 2**30:.1f} GiB are available; "
                         f"{fix}")


def local_rank_limit() -> int:
    """The most local ranks worth starting on this machine: 4 per CPU this process may use (more only
    thrash it; a bigger job belongs on several machines, under torchrun)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 4 * cpus


def local_ranks(text: str) -> int:
    """An argparse type for `--nproc` of a command that starts its own local ranks: 1 to
    `local_rank_limit()`."""
    value = _number(int, text)
    limit = local_rank_limit()
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    if value > limit:
        raise argparse.ArgumentTypeError(f"{value} local ranks on this machine's {limit // 4} CPUs would only "
                                         f"thrash it; give at most {limit}, or start ranks on several machines "
                                         "with torchrun")
    return value


local_ranks.__name__ = "int"
local_ranks.bounds = (1, local_rank_limit())  # the fuzzer (tests/fuzz_cli.py) tries values at and beyond them
