"""`train.init_from`: a run's starting weights from a pretrained folder, at any layout.

Three kinds of folder hold a model: a Hugging Face folder (config.json, or a GGUF file), what
`megazoo import-hf` writes (model.yaml + model.safetensors) and a training checkpoint (a run's
`checkpoints/` or one `iter_*`). `read(path)` gives the architecture and model config (the trainer
builds the run's model from it, entry point megazoo.pretrained:read); `load_into(chunks, ...)`
copies each rank's slice of every tensor into its chunks.

Rules: a tensor the model has but the folder lacks (a new task head, adapters) keeps its fresh
initialisation and is listed; a folder tensor of the wrong shape, or one the model does not have,
is an error naming it, except those under `unused_ok` (heads a task deliberately drops, such as
the masked-LM head when fine-tuning a classifier), which are listed as unused.
"""

from __future__ import annotations

from pathlib import Path

import torch

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.init import local_slice
from megazoo.core.train.errors import ConfigError
from megazoo.zoo.hf.shard import expected_shapes

_cache: dict[str, tuple] = {}


def _key(path: Path) -> str:
    return f"{path.resolve()}@{path.stat().st_mtime_ns}"


def _folder(path) -> Path:
    path = Path(path)
    if not path.is_dir():
        raise ConfigError(f"train.init_from={str(path)!r}: no such folder; give a Hugging Face folder, an "
                          f"`megazoo import-hf` folder or a training checkpoint")
    return path


def _model_section(model: dict) -> dict:
    """A folder's model config as a recipe's model section (no arch, no run setting)."""
    return {k: v for k, v in model.items() if k not in ("arch", "recompute")}


def read_full(path) -> tuple[str, dict, dict[str, torch.Tensor]]:
    """(arch, model config dict, full megazoo state dict) of any model folder (cached per process)."""
    path = _folder(path)
    key = _key(path)
    if key not in _cache:
        _cache.clear()  # one pretrained model at a time is what a run needs
        _cache[key] = _read(path)
    return _cache[key]


def _read(path: Path) -> tuple[str, dict, dict]:
    from megazoo.zoo.io import load_model

    try:  # any model folder, Hugging Face ones included, through the one loader
        arch, model, state = load_model(path, hf=True)
    except (ValueError, OSError) as e:  # CheckpointError and HFImportError are ValueErrors; an unreadable file
        raise ConfigError(f"train.init_from={str(path)!r}: {e}") from None
    return arch, _model_section(model), state


def read(path) -> tuple[str, dict]:
    """(arch, model config dict) of a model folder: the entry point megazoo.pretrained:read. Run
    before any rank starts, it reads no weights where the folder records its config (import-hf
    folders, training checkpoints); a Hugging Face folder's config depends on its tensors."""
    from megazoo.zoo.io import model_config

    path = _folder(path)
    try:
        arch, model = model_config(path, hf=True)
    except (ValueError, OSError) as e:
        raise ConfigError(f"train.init_from={str(path)!r}: {e}") from None
    return arch, _model_section(model)


@torch.no_grad()
def load_into(chunks, path, ctx: ParallelContext, full_model, unused_ok: tuple[str, ...] = ()) -> dict:
    """Copy this rank's slices from the folder at `path` into `chunks`. `full_model`: the whole
    model built on the meta device (to tell tensors another stage holds from unexpected ones).
    Returns {"missing": [...], "unused": [...]}; raises ConfigError on a wrong shape or an
    unexpected tensor."""
    _, _, state = read_full(path)
    known = {n: tuple(shape) for n, shape in expected_shapes(full_model).items()}  # full_model is at tp=1
    unexpected = [k for k in state if k not in known and not k.startswith(unused_ok)]
    if unexpected:
        raise ConfigError(f"train.init_from={str(path)!r}: tensor {unexpected[0]!r} has no place in this model"
                          + (f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else "")
                          + "; start from a checkpoint of the same architecture")
    for name, shape in known.items():
        if name in state and tuple(state[name].shape) != shape:
            raise ConfigError(f"train.init_from={str(path)!r}: tensor {name!r} has shape {tuple(state[name].shape)}, "
                              f"this model needs {shape}; the model config differs from the checkpoint's")
    for chunk in chunks:
        for name, p in chunk.named_parameters():
            src = name if name in state else getattr(p, "init_name", None)
            if src in state:
                p.copy_(local_slice(state[src].to(p.dtype), p, ctx.tp, ctx.tp_rank))
    return {"missing": sorted(n for n in known if n not in state),
            "unused": sorted(k for k in state if k not in known)}
