"""Where a recipe name points: a YAML path, or a recipe shipped in megazoo.recipes.

Its own module so any command (and config.py) resolves names the same way without importing the
config classes.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from megazoo.core.train.errors import ConfigError


def recipe_dir() -> Path:
    import megazoo.recipes

    return Path(megazoo.recipes.__file__).parent


def resolve_recipe(recipe: str | os.PathLike) -> Path:
    """A YAML path, or the name of a shipped recipe with or without `.yaml`."""
    path = Path(recipe)
    if path.is_file():
        return path
    name = str(recipe)
    for candidate in (recipe_dir() / name, recipe_dir() / f"{name}.yaml"):
        if candidate.is_file():
            return candidate
    known = sorted(p.stem for p in recipe_dir().glob("*.yaml"))
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean `{close[0]}`?" if close else ""
    raise ConfigError(f"recipe {name!r} is neither a file nor a shipped recipe{hint} (shipped: {', '.join(known)})")
