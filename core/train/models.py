"""Finding the builder of an architecture or a task without importing the zoo or the tasks (core
imports neither): entry-point groups "megazoo.models" (architectures), "megazoo.tasks" (tasks on
the trainer) and "megazoo.pretrained" (reading a pretrained folder's architecture for
train.init_from). The builder protocol is megazoo.core.train.builder.

config.py calls load_builder; this module imports only errors.py, never config.py (no cycle).
"""

from __future__ import annotations

import difflib
from importlib.metadata import entry_points

from megazoo.core.train.errors import ConfigError


def available_architectures() -> dict:
    return {ep.name: ep for ep in entry_points(group="megazoo.models")}


def available_tasks() -> dict:
    return {ep.name: ep for ep in entry_points(group="megazoo.tasks")}


def _pick(group: dict, name, key: str, what: str):
    if name not in group:
        close = difflib.get_close_matches(str(name), group, n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        raise ConfigError(f"{key}={name!r} is not a known {what}{hint} (known: {', '.join(sorted(group))})")
    return group[name].load()


def load_builder(model: dict, recompute: str = "none", task: dict | None = None):
    """The builder of the run: the task's (wrapping its architecture's) when `task` names one,
    else the architecture's."""
    if task:
        task = dict(task)
        name = task.pop("name", None)
        if name is None:
            raise ConfigError(f"task: name the task with task.name (known: {', '.join(sorted(available_tasks()))})")
        return _pick(available_tasks(), name, "task.name", "task")(task, dict(model), recompute)
    return _pick(available_architectures(), model.get("arch"), "model.arch", "architecture")(dict(model), recompute)


def read_pretrained(path) -> tuple[str, dict]:
    """(arch, model config dict) of a pretrained folder (Hugging Face, import-hf or a training
    checkpoint), through the "megazoo.pretrained" entry point `read`."""
    (ep,) = [e for e in entry_points(group="megazoo.pretrained") if e.name == "read"] or [None]
    if ep is None:
        raise ConfigError("train.init_from needs megazoo's zoo (entry point megazoo.pretrained:read is missing)")
    return ep.load()(path)
