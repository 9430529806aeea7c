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


def _check(path, shapes: dict[str, tuple], full_model, unused_ok: tuple[str, ...]) -> dict:
    """The folder's tensors (name -> shape) against the model's; raises ConfigError on a wrong shape
    or an unexpected tensor; returns {"missing": [...], "unused": [...]}."""
    known = {n: tuple(shape) for n, shape in expected_shapes(full_model).items()}  # full_model is at tp=1
    unexpected = [k for k in shapes if k not in known and not k.startswith(unused_ok)]
    if unexpected:
        raise ConfigError(f"train.init_from={str(path)!r}: tensor {unexpected[0]!r} has no place in this model"
                          + (f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else "")
                          + "; start from a checkpoint of the same architecture")
    for name, shape in known.items():
        if name in shapes and tuple(shapes[name]) != shape:
            raise ConfigError(f"train.init_from={str(path)!r}: tensor {name!r} has shape {tuple(shapes[name])}, "
                              f"this model needs {shape}; the model config differs from the checkpoint's")
    return {"missing": sorted(n for n in known if n not in shapes),
            "unused": sorted(k for k in shapes if k not in known)}


def _source(name: str, p, stored) -> str | None:
    """The folder's tensor that parameter `name` starts from (a tied copy's is its original's)."""
    src = name if name in stored else getattr(p, "init_name", None)
    return src if src in stored else None


def _local(tensor: torch.Tensor, p, dtype, ctx: ParallelContext) -> torch.Tensor:
    """This rank's slice of a folder's tensor for parameter `p` (built in `dtype`)."""
    return local_slice(tensor.to(dtype), p, ctx.tp, ctx.tp_rank)


@torch.no_grad()
def load_into(chunks, path, ctx: ParallelContext, full_model, unused_ok: tuple[str, ...] = ()) -> dict:
    """Copy this rank's slices from the folder at `path` into `chunks`. `full_model`: the whole
    model built on the meta device (to tell tensors another stage holds from unexpected ones).
    Returns {"missing": [...], "unused": [...]}; raises ConfigError on a wrong shape or an
    unexpected tensor."""
    _, _, state = read_full(path)
    report = _check(path, {k: v.shape for k, v in state.items()}, full_model, unused_ok)
    for chunk in chunks:
        for name, p in chunk.named_parameters():
            src = _source(name, p, state)
            if src is not None:
                p.copy_(_local(state[src], p, p.dtype, ctx))
    return report


def open_reader(path, ctx: ParallelContext, full_model, unused_ok: tuple[str, ...] = ()):
    """(a UnitReader of the folder at `path`, None) when its tensors can be read one at a time by
    name; (None, why not) otherwise. Checks the folder as load_into does (ConfigError)."""
    from megazoo.zoo.io import lazy_model

    path = _folder(path)
    try:
        found = lazy_model(path, hf=True)
    except Exception as e:  # safetensors' own error type too: load_weights' whole read names the problem
        reason = str(e).splitlines()[0] if str(e).strip() else type(e).__name__
        return None, f"its tensors cannot be read one at a time ({reason})"
    if found is None:
        return None, "only safetensors weights of a Hugging Face or import-hf folder are read one tensor at a time"
    _, _, meta, get = found
    report = _check(path, {k: v.shape for k, v in meta.items()}, full_model, unused_ok)
    return UnitReader(path, ctx, set(meta), get, report), None


class UnitReader:
    """train.init_from read parameter by parameter, for ZeRO-3 (core/optim/weight_shards.py asks for
    one unit's parameters at a time, of chunks built on the meta device): each parameter's value
    is what load_into would copy into it (the same tensor, slice and dtype); a parameter the folder
    lacks gets the value the model's initialisation gives it (core/parallel/init.py)."""

    def __init__(self, path, ctx: ParallelContext, stored: set[str], get, report: dict):
        self.path, self.ctx, self.stored, self.get, self.report = path, ctx, stored, get, report
        self.names: dict[int, str] = {}
        self.dtypes: dict[int, torch.dtype] = {}
        self.seed = 0

    def bind(self, chunks, seed: int) -> str | None:
        """Take the chunks (built on the meta device) whose values values() gives; why not, if it cannot."""
        self.seed = seed
        for chunk in chunks:
            for name, p in chunk.named_parameters():
                if _source(name, p, self.stored) is None and not hasattr(p, "init"):
                    return (f"parameter {name!r} is not in {self.path} and has no layout-independent "
                            f"initialisation to draw it from")
                self.names[id(p)] = name
                self.dtypes[id(p)] = p.dtype
        return None

    @torch.no_grad()
    def values(self, params: list):
        """The initial values of `params`, one at a time (this rank's slices, in the dtype they were
        built in): a tensor is read from the folder when its parameter's turn comes."""
        from megazoo.core.parallel.init import master_shape, master_tensor

        for p in params:
            name, dtype = self.names[id(p)], self.dtypes[id(p)]
            src = _source(name, p, self.stored)
            if src is None:  # as core/parallel/init.initialize draws it
                master = master_tensor(getattr(p, "init_name", None) or name, master_shape(p, self.ctx.tp),
                                       p.init, self.seed)
                value = local_slice(master, p, self.ctx.tp, self.ctx.tp_rank).to(dtype)
            else:
                value = _local(self.get(src), p, dtype, self.ctx)
            yield value.to(self.ctx.device)
