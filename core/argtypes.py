"""Checked numeric types for command-line flags: `type=positive_int` and the like.

A value out of range is refused by argparse itself (usage line, `PROG: error: argument --flag: ...`,
exit 2) before the command does anything, so no command runs with `--nproc 0` or `--top-p 5`, and
no 0 is silently replaced by a default.
"""

from __future__ import annotations

import argparse
import math


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
