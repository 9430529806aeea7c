"""The checks every config piece shares: an unknown key names the nearest valid one, a value of the
wrong type says which type was expected.

Their own module (beside errors.py) so that config.py, the entry-point lookup in models.py, the
zoo's builders and the task packages use one definition without importing config.py.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from typing import Any

from megazoo.core.train.errors import ConfigError


def unknown_key(key: str, valid: list[str], where: str) -> ConfigError:
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    if not close:  # try the last component alone (e.g. train.setps -> train.steps)
        tail = key.rsplit(".", 1)[-1]
        close = [k for k in valid if difflib.get_close_matches(tail, [k.rsplit(".", 1)[-1]], n=1, cutoff=0.7)][:1]
    hint = f"; did you mean `{close[0]}`?" if close else ""
    return ConfigError(f"{where}: unknown key `{key}`{hint}")


def check_type(key: str, value: Any, annotation, where: str = "config") -> Any:
    """Accept `value` for a field annotated `annotation` (a type or its string form) or raise."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    options = [t.strip() for t in text.split("|")]
    if value is None:
        if "None" in options or "Any" in options:
            return None
        raise ConfigError(f"{where}: {key} must be {text}, got null")
    for opt in options:
        if opt == "Any":
            return value
        if opt == "bool" and isinstance(value, bool):
            return value
        if opt == "int" and isinstance(value, int) and not isinstance(value, bool):
            return value
        if opt == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if opt in ("int", "float") and isinstance(value, str):  # YAML 1.1 reads 1e-3 as a string
            try:
                number = float(value)
            except ValueError:
                continue
            if not math.isfinite(number):  # "nan", "inf": words, not the number a user meant to type
                continue
            if opt == "float":
                return number
            if number.is_integer():
                return int(number)
        if opt == "str" and isinstance(value, str):
            return value
        if opt.startswith(("list", "tuple")) and isinstance(value, (list, tuple)):
            return list(value)
    raise ConfigError(f"{where}: {key} must be {text}, got {value!r} ({type(value).__name__})")


def fill_dataclass(cls, values: dict, prefix: str, where: str, unchecked: tuple[str, ...] = ()):
    """cls() with `values` set, each key known (an unknown one names the nearest) and of its field's
    type (keys in `unchecked` are taken as they are, for the caller to check); e.g. a task's settings
    from a recipe's `task:` section, with prefix "task" and where "task race"."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    out = cls()
    for key, value in values.items():
        if key not in known:
            raise unknown_key(f"{prefix}.{key}", [f"{prefix}.{k}" for k in known], where)
        setattr(out, key, value if key in unchecked else check_type(f"{prefix}.{key}", value, known[key].type))
    return out
