"""A minimal megazoo model checkpoint for import/export (until core/checkpoint's format lands):

    DIR/model.yaml         arch, config (a dict), format version, optional notes (source, parallel layout)
    DIR/model.safetensors  the FULL unsharded state dict (megazoo names)
    DIR/tokenizer/         optional tokenizer files

`save_model` and `load_model` are the only entry points, so they can be redirected later.
"""

from __future__ import annotations

from pathlib import Path

import torch
import yaml

FORMAT = "megazoo-model/1"


class CheckpointError(ValueError):
    """A folder that is not a readable megazoo model checkpoint."""


def save_model(dir, arch: str, config, state_dict: dict[str, torch.Tensor], tokenizer=None,
               extra: dict | None = None, overwrite: bool = False) -> Path:
    """Write atomically (a temporary sibling folder moved into place when complete).
    `config`: a config dataclass (with to_dict) or a dict; `tokenizer`: a folder or an object
    with save_pretrained; `extra`: more keys for model.yaml."""
    from safetensors.torch import save_file

    from megazoo.zoo.hf.writer import atomic_folder, copy_tokenizer

    cfg = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    out = Path(dir)
    with atomic_folder(out, overwrite) as tmp:
        meta = {"format": FORMAT, "arch": arch, "config": cfg, **(extra or {})}
        (tmp / "model.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
        save_file({k: v.detach().cpu().contiguous() for k, v in state_dict.items()}, str(tmp / "model.safetensors"),
                  metadata={"format": "pt", "arch": arch})
        if tokenizer is not None:
            (tmp / "tokenizer").mkdir()
            copy_tokenizer(tokenizer, tmp / "tokenizer")
    return out


def read_meta(dir) -> dict:
    path = Path(dir)
    if not (path / "model.yaml").exists():
        raise CheckpointError(f"{path} is not a megazoo model checkpoint: no model.yaml (create one with "
                              "`megazoo import-hf` or a training run)")
    meta = yaml.safe_load((path / "model.yaml").read_text()) or {}
    if "arch" not in meta or "config" not in meta:
        raise CheckpointError(f"{path / 'model.yaml'} lacks 'arch' or 'config'")
    return meta


def load_model(dir) -> tuple[str, dict, dict[str, torch.Tensor]]:
    """(arch, config dict, full state dict)."""
    from safetensors.torch import load_file

    meta = read_meta(dir)
    weights = Path(dir) / "model.safetensors"
    if not weights.exists():
        raise CheckpointError(f"{weights} is missing: the checkpoint is incomplete")
    return meta["arch"], meta["config"], load_file(str(weights))


def tokenizer_dir(dir) -> Path | None:
    path = Path(dir) / "tokenizer"
    return path if path.is_dir() and any(path.iterdir()) else None
