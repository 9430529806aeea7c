"""Writing HF folders: safetensors (sharded with an index when large), tokenizer files, atomically."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import torch

from megazoo.core.fs import atomic_folder  # noqa: F401 (the one helper, re-exported for zoo's writers)

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "tokenizer.model", "chat_template.jinja")


def parse_size(size) -> int:
    """5000000, "5MB", "2GB", "500KiB" -> bytes."""
    if isinstance(size, int):
        return size
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMG]i?B|B)?\s*", str(size), re.I)
    if not m:
        raise ValueError(f"cannot read the size {size!r}; write e.g. 2GB or 500MB")
    unit = (m.group(2) or "B").upper()
    mult = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}[unit]
    return int(float(m.group(1)) * mult)


def write_weights(folder: Path, state: dict[str, torch.Tensor], max_shard_size="2GB") -> list[str]:
    """model.safetensors, or model-0000k-of-0000n.safetensors + model.safetensors.index.json."""
    from safetensors.torch import save_file

    limit = parse_size(max_shard_size)
    shards, current, size = [], {}, 0
    for name, t in state.items():
        nbytes = t.numel() * t.element_size()
        if current and size + nbytes > limit:
            shards.append(current)
            current, size = {}, 0
        current[name] = t.detach().cpu().contiguous()
        size += nbytes
    shards.append(current)
    meta = {"format": "pt"}
    if len(shards) == 1:
        save_file(shards[0], str(folder / "model.safetensors"), metadata=meta)
        return ["model.safetensors"]
    names, weight_map = [], {}
    for i, shard in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(folder / fname), metadata=meta)
        names.append(fname)
        weight_map.update({k: fname for k in shard})
    total = sum(t.numel() * t.element_size() for t in state.values())
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    return names


def copy_tokenizer(src, folder: Path) -> list[str]:
    """Tokenizer files from a folder, or from a tokenizer object (save_pretrained)."""
    if src is None:
        return []
    if hasattr(src, "save_pretrained"):
        src.save_pretrained(str(folder))
        return sorted(p.name for p in folder.iterdir() if p.name in TOKENIZER_FILES)
    src = Path(src)
    copied = []
    for name in TOKENIZER_FILES:
        if (src / name).exists():
            shutil.copy2(src / name, folder / name)
            copied.append(name)
    return copied
