"""Task evaluations that plug into the leaderboard (entry-point group "megazoo.evaluations").

A task package registers an `Evaluation`: its name (the suite's `tasks[].name`), the data it reads,
its metric names, the headline metric and its direction, the model kinds it scores, and
`run(checkpoint, path, options) -> {metric: value}`. `megazoo eval leaderboard` runs a registered
evaluation for every model of the suite whose kind it accepts and shows "-" for the others, beside
the zero-shot LM tasks. Kinds: "lm" (a gpt/llama checkpoint or HF causal LM), "encoder" (a BERT
without a task head), or a task name ("race": a checkpoint fine-tuned by `task: race`).

    # pyproject.toml
    [project.entry-points."megazoo.evaluations"]
    race = "megazoo.tasks.race.leaderboard:EVALUATION"
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Callable


@dataclass(frozen=True)
class Evaluation:
    name: str
    data: str  # the format of `path`, in words (shown by `megazoo eval leaderboard --list`)
    metrics: tuple[str, ...]
    headline: str
    run: Callable[[str, str, dict], dict]  # (checkpoint, path, suite task entry) -> metrics
    kinds: tuple[str, ...] = ("lm",)
    higher_is_better: bool = True
    options: dict = field(default_factory=dict)  # optional keys of the suite's task entry, with help


@functools.cache  # entry points do not change within a process; the table and chart ask per cell
def evaluations() -> dict[str, Evaluation]:
    """The registered task evaluations by name."""
    out = {}
    for ep in entry_points(group="megazoo.evaluations"):
        ev = ep.load()
        out[ev.name] = ev
    return out


def model_kind(entry: dict) -> str:
    """The kind of a suite's model entry (see the module docstring)."""
    if "hf" in entry:
        return "lm"
    from megazoo.core.checkpoint import open_checkpoint
    from megazoo.zoo.io import model_config

    arch, cfg = model_config(entry["checkpoint"])
    if (cfg or {}).get("task_head", "none") not in (None, "none"):
        try:
            _, record = open_checkpoint(entry["checkpoint"])
            meta_task = (record.get("meta") or {}).get("task") or {}
            task = meta_task.get("name")
            if task and meta_task.get("kind"):  # a task of several kinds (biomed: ner, re, qa) -> "biomed-ner"
                task = f"{task}-{meta_task['kind']}"
        except Exception:  # an import-hf folder with a head: no run metadata
            task = None
        return task or f"{arch}-{cfg['task_head']}"
    from megazoo.core.plan.traits import DECODER, ENCODER, kind_of

    kind = kind_of(arch)
    return "lm" if kind == DECODER else "encoder" if kind == ENCODER else arch
