"""Checking a stage's settings (recipe keys and `--set` values): known keys only, numbers within
bounds, no NaN or infinity. Every refusal is one line naming the key (`fuzzy-dedup.permutations`,
`curate.yaml: stages.filter.min_words`) and what would be accepted.

`check_stage_config(name, cfg, where)` returns the stage's full settings (defaults filled in):
what the stage runs with and, as JSON, what `_settings.json` records, so that a rerun with other
settings is seen (pipeline.py).
"""

from __future__ import annotations

import difflib
import math

from megazoo.curate.errors import CurateError


def unknown_key(where: str, key, valid, what: str = "setting") -> CurateError:
    """The refusal of an unknown key, naming the nearest valid one."""
    valid = sorted(str(v) for v in valid)
    close = difflib.get_close_matches(str(key), valid, n=1)
    hint = f"; did you mean `{close[0]}`?" if close else ""
    sep = " " if where.endswith(":") else "."  # `r.yaml: limt` for a top-level key, `filter.min_word` below
    return CurateError(f"{where}{sep}{key}: unknown {what}{hint} ({what.split()[-1]}s: {', '.join(valid)})")


def check_keys(where: str, cfg: dict, valid, what: str = "setting") -> None:
    for key in cfg:
        if key not in valid:
            raise unknown_key(where, key, valid, what)


def number(where: str, value, lo: float, hi: float, whole: bool = False, open_lo: bool = False):
    """`value` if it is a finite number (a whole one when `whole`) in [lo, hi] ((lo, hi] with open_lo)."""
    kind = "a whole number" if whole else "a number"
    shown = [str(v) if isinstance(v, int) else f"{v:g}" for v in (lo, hi)]
    span = f"{'(' if open_lo else '['}{shown[0]}, {shown[1]}]"
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok and whole and isinstance(value, float):
        ok = math.isfinite(value) and value == int(value)
        value = int(value) if ok else value
    if not ok or not math.isfinite(value) or value < lo or value > hi or (open_lo and value == lo):
        raise CurateError(f"{where}: {value!r}; needs {kind} in {span}")
    return value


def check_stage_config(name: str, cfg: dict | None, where: str | None = None) -> dict:
    """The stage's settings, checked and completed with its defaults."""
    where = where or name
    cfg = dict(cfg or {})
    if name == "filter":
        from dataclasses import asdict

        from megazoo.curate.filters import FilterConfig

        out = asdict(FilterConfig.from_dict(cfg, where))
    elif name == "quality":
        from megazoo.curate.quality import check_config

        out = check_config(cfg, where)
    elif name == "exact-dedup":
        if cfg:
            raise CurateError(f"{where}.{sorted(cfg)[0]}: exact-dedup takes no settings")
        out = {}
    elif name == "fuzzy-dedup":
        from megazoo.curate.fuzzy_dedup import check_config

        out = check_config(cfg, where)
    elif name == "decontaminate":
        from megazoo.curate.decontaminate import check_config

        out = check_config(cfg, where)
    elif name == "blend":
        from megazoo.curate.blend import check_config

        out = check_config(cfg, where)
    else:
        raise CurateError(f"unknown stage `{name}`")
    return out
