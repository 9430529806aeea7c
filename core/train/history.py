"""A run folder's honest history: its config.yaml always states what the weights were trained with.

The first run into a folder writes config.yaml (the fully resolved config). A rerun that continues
the folder's own checkpoint compares its resolved settings with the run's (config.yaml with its
history applied), key by dotted key:

- run-control keys (RUN_CONTROL: logging, checkpoint handling, evaluation cadence, compilation)
  do not change what is trained: they may differ freely and are not recorded;
- keys that continue the same training (CONTINUE: train.steps to train further, the layout,
  the precision, recompute, the optimizer's sharding) may differ, and each change is recorded;
- any other change (learning rate, schedule, batch, seed, data, dropout, task settings) is
  refused in one line naming each key with its old and new value, unless the user sets
  `checkpoint.allow_changes=true`: then the run trains with the new values and records them.

Model keys that fix the architecture, and data.tokenizer, are compared with the checkpoint itself
(checkpointing.load refuses a change with its own message), so they are left to that check.

A change is appended to config.yaml's `history` list, never written over the values the run
started with (the top of the file):

    history:
    - date: '2025-01-31T12:00:00+01:00'
      from_step: 4            # the first step trained with the new values
      changes: {train.lr: {was: 0.003, now: 0.01}}

A run that trains no new step records nothing.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import yaml

from megazoo.core.fs import write_text_atomic
from megazoo.core.train.errors import ConfigError

OVERRIDE = "checkpoint.allow_changes"
# keys whose value changes how a run is logged, saved, evaluated or compiled, not what it trains
RUN_CONTROL_PREFIXES = ("log.", "checkpoint.")
RUN_CONTROL = frozenset({"name", "train.eval_interval", "train.eval_iters", "train.log_interval", "train.compile",
                         "train.compile_backend", "train.allocator", "train.init_from", "data.cache_dir",
                         "data.tokenizer"})
# keys that continue the same training: more steps, another layout or precision (the checkpoint
# loads at any layout and precision; micro_batch only splits the same global batch)
CONTINUE_PREFIXES = ("parallel.", "precision.", "optim.")
CONTINUE = frozenset({"train.steps", "train.epochs", "train.micro_batch", "recompute"})
# model keys that are not the architecture (the checkpoint compares every other model key)
MODEL_TRAINING = frozenset({"dropout", "attention_dropout"})
MISSING = object()


def kind(key: str) -> str:
    """"control" (ignored), "continue" (allowed, recorded) or "train" (needs the override)."""
    if key.startswith("model."):
        return "train" if key[len("model."):] in MODEL_TRAINING else "control"
    if key in RUN_CONTROL or key.startswith(RUN_CONTROL_PREFIXES):
        return "control"
    if key in CONTINUE or key.startswith(CONTINUE_PREFIXES):
        return "continue"
    return "train"


def flatten(config: dict) -> dict[str, Any]:
    """Dotted keys of a config dict: each section's keys under its name (`train.lr`), top-level
    values as they are (`recompute`); the history list is not a setting."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key == "history":
            continue
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


def current(saved: dict) -> dict[str, Any]:
    """The settings a run trains with now: its starting values with every recorded change applied."""
    values = flatten(saved)
    for entry in saved.get("history") or []:
        for key, change in (entry.get("changes") or {}).items():
            values[key] = change.get("now")
    return values


def apply_history(config: dict) -> dict:
    """A config.yaml dict as a recipe: its starting values with its history applied (no `history`)."""
    body = {k: (dict(v) if isinstance(v, dict) else v) for k, v in config.items() if k != "history"}
    for entry in config.get("history") or []:
        for key, change in (entry.get("changes") or {}).items():
            head, _, rest = key.partition(".")
            if rest:
                body.setdefault(head, {})[rest] = change.get("now")
            else:
                body[head] = change.get("now")
    return body


def _normal(config: dict) -> dict:
    """The dict as config.yaml stores it (tuples as lists, numbers as YAML reads them back)."""
    return yaml.safe_load(yaml.safe_dump(config, sort_keys=False))


def _show(value) -> str:
    """A value as the user writes it after --set (0.01, cosine, [0.9, 0.95])."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6)
    return " ".join(line for line in text.splitlines() if line.strip() not in ("", "..."))


class Rerun:
    """A run continued in its own folder: the run's config.yaml as read, and what this rerun changes."""

    def __init__(self, path: Path, saved: dict, changes: dict[str, tuple]):
        self.path, self.saved, self.changes = path, saved, changes

    def record(self, step: int) -> str:
        """config.yaml with this rerun's changes appended as a dated entry from step `step + 1`."""
        saved = dict(self.saved)
        entry = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "from_step": step + 1,
                 "changes": {k: {"was": was, "now": now} for k, (was, now) in self.changes.items()}}
        saved["history"] = list(saved.get("history") or []) + [entry]
        return yaml.safe_dump(saved, sort_keys=False)


def read_run_config(path: Path) -> dict:
    """A run folder's config.yaml as a dict; unreadable or not a mapping: a ConfigError naming it."""
    try:
        saved = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: cannot read the run's config ({e}); it records what the run was trained with: "
                          f"restore it, or give this run its own log.dir") from None
    if not isinstance(saved, dict):
        raise ConfigError(f"{path}: not a run config (expected a mapping of sections); restore it, or give this run "
                          f"its own log.dir")
    return saved


def check_rerun(config_path: Path, resolved: dict, allow_changes: bool, run_dir) -> Rerun:
    """Compare this rerun's resolved config with the run's config.yaml at `config_path`: refuse
    changed training settings (unless `allow_changes`), return what is to be recorded."""
    saved = read_run_config(config_path)
    was_values, now_values = current(saved), flatten(_normal(resolved))
    refused, recorded = [], {}
    for key in dict.fromkeys([*was_values, *now_values]):
        was, now = was_values.get(key, MISSING), now_values.get(key, MISSING)
        if was is MISSING or now is MISSING or was == now:  # a key one side's megazoo does not know says nothing
            continue
        what = kind(key)
        if key == "train.warmup" and now_values.get("train.warmup_fraction") and \
                now_values.get("train.warmup_fraction") == was_values.get("train.warmup_fraction"):
            what = "continue"  # warmup_fraction x steps: follows train.steps
        if what == "control":
            continue
        recorded[key] = (was, now)
        if what == "train":
            refused.append(f"{key} {_show(was)} -> {_show(now)}")
    if refused and not allow_changes:
        raise ConfigError(f"run directory {run_dir} continues a run trained with other settings: {', '.join(refused)} "
                          f"(see {config_path}); keep the run's values, give a new log.dir for a new run, or set "
                          f"{OVERRIDE}=true to continue with the new values (config.yaml records each change and "
                          f"the step it begins at)")
    return Rerun(config_path, saved, recorded)


def write_config(path: Path, resolved: dict, rerun: Rerun | None, step: int, steps: int) -> None:
    """config.yaml of this run: the resolved config for a run that starts here; for a rerun its
    history with this rerun's changes appended, when it trains any new step and changes anything."""
    if rerun is None:
        write_text_atomic(path, yaml.safe_dump(resolved, sort_keys=False))
    elif rerun.changes and step < steps:
        write_text_atomic(path, rerun.record(step))
