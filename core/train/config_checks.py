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


def check_context_parallel(cfg, builder, chunks=None) -> None:
    """What parallel.cp > 1 needs, checked at startup (one line each): a sequence length that splits
    into 2 x cp equal chunks (and each rank's part into tp pieces under sp), a model whose stages
    say they take a split sequence (`context_parallel = True`: the GPT/Llama decoders), no task
    package (their collates and heads read whole sequences), no attention dropout."""
    p = cfg.parallel
    if p.cp == 1:
        return
    from megazoo.core.parallel.cp_split import ContextParallelError, check_divisible

    seq = builder.seq_length
    try:
        check_divisible(seq, p.cp)
    except ContextParallelError as e:
        raise ConfigError(str(e)) from None
    if p.sp and (seq // p.cp) % p.tp:
        raise ConfigError(f"model.seq_length={seq} / parallel.cp={p.cp} = {seq // p.cp} tokens per cp rank is not "
                          f"divisible by parallel.tp={p.tp} (sequence parallelism splits each cp rank's part)")
    model = builder.to_dict()
    if cfg.task:
        raise ConfigError(f"parallel.cp={p.cp}: task {cfg.task.get('name')!r} does not support context "
                          "parallelism yet (its batches and heads need whole sequences); set parallel.cp=1")
    supported = (all(getattr(c, "context_parallel", False) for c in chunks) if chunks is not None
                 else getattr(builder, "context_parallel", False))
    if not supported:
        raise ConfigError(f"parallel.cp={p.cp}: model.arch={model.get('arch')!r} does not support context "
                          "parallelism yet (only the gpt and llama decoders do); set parallel.cp=1")
    if model.get("attention_dropout"):
        raise ConfigError(f"parallel.cp={p.cp}: model.attention_dropout={model['attention_dropout']} is not "
                          "supported under context parallelism (ring attention has no dropout); set it to 0")
