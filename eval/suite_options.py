"""The numeric options of a leaderboard suite entry (`{name: race, batch_size: 8}`), checked the way a
task's flags are (core/argtypes.py int_in / float_in): a lower and an upper bound, NaN and inf refused,
and a mistake is a ValueError naming the key and the value. Every task's leaderboard.py reads its
entry's numbers through these, so one suite reads one wording whatever the task."""

from __future__ import annotations

import math


def suite_int(entry: dict, key: str, default, lo: int, hi: int):
    """entry[key] (or `default`) as a whole number in [lo, hi]; None stays None. A float is not cut to an
    int and a bool is no number (YAML `yes`), so a negative `limit` is not "all" and 2.5 is not 2."""
    value = entry.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"suite option `{key}: {value!r}` is not a whole number")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"suite option `{key}: {value!r}` is not a whole number") from None
    if not lo <= number <= hi:
        raise ValueError(f"suite option `{key}: {number}` must be between {lo} and {hi}")
    return number


def suite_float(entry: dict, key: str, default, lo: float, hi: float):
    """entry[key] (or `default`) as a finite number in [lo, hi]; None stays None."""
    value = entry.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"suite option `{key}: {value!r}` is not a number")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"suite option `{key}: {value!r}` is not a number") from None
    if not math.isfinite(number) or not lo <= number <= hi:
        raise ValueError(f"suite option `{key}: {value!r}` must be between {lo} and {hi}")
    return number
