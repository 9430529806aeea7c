"""A task's settings (a recipe's `task:` section) as a dataclass that states its own checks.

Every task package reads its keys the same way: fill_dataclass (each key known, of its field's
type), then the allowed values and least values of single keys, then the rules that tie keys
together. The first two are data on the class, checked here once for every task; a task writes
only the third, in `check`:

    @dataclass
    class RaceTask(TaskSettings):
        NAME = "race"                                      # "task race" in messages
        CHOICES = {"kind": ("qa", "answers")}              # a key's allowed values
        BOUNDS = {"max_seq_length": 3, "max_qa_length": 1} # a key's least value
        train_split: str = "train"
        ...

Class attributes without a type annotation are not dataclass fields, so they are no recipe keys.
A group of keys that several tasks share is a dataclass of its own with its own BOUNDS and CHOICES
(zoo/bert/task.py SpanWindows); a task inherits it, and the checks of every class it derives from apply.
"""

from __future__ import annotations

from typing import ClassVar

from megazoo.core.train.config_checks import fill_dataclass
from megazoo.core.train.errors import ConfigError


class TaskSettings:
    """Base of a task's settings dataclass: `from_dict` reads and checks a recipe's task section."""

    NAME: ClassVar[str] = ""  # the task's registered name, for messages ("task race")
    CHOICES: ClassVar[dict[str, tuple]] = {}  # key -> its allowed values
    BOUNDS: ClassVar[dict[str, float]] = {}  # key -> its least value (inclusive)
    UNCHECKED: ClassVar[tuple[str, ...]] = ()  # keys taken as given (no type check; `check` checks them)

    @classmethod
    def from_dict(cls, task: dict):
        """The settings of `task` (its keys without "name"): choices first, then `check` (which may
        fill values derived from others), then the bounds; each error one line naming the key."""
        out = fill_dataclass(cls, task, "task", f"task {cls.NAME}", cls.UNCHECKED)
        for key, allowed in _declared(cls, "CHOICES").items():
            value = getattr(out, key)
            if value not in allowed:
                raise ConfigError(f"task.{key} must be one of {', '.join(map(str, allowed))} (task {cls.NAME}), "
                                  f"got {value!r}")
        out.check()
        for key, least in _declared(cls, "BOUNDS").items():
            value = getattr(out, key)
            if not value >= least:
                raise ConfigError(f"task.{key} must be >= {least} (task {cls.NAME}), got {value}")
        return out

    def check(self) -> None:
        """The rules between keys, and values derived from others (none here)."""


def _declared(cls, name: str) -> dict:
    """The `name` tables (BOUNDS, CHOICES) of cls and every class it derives from, merged (the
    nearest class wins a key)."""
    out: dict = {}
    for klass in reversed(cls.__mro__):
        out.update(vars(klass).get(name, {}))
    return out
