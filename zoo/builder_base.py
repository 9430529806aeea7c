"""What every architecture's trainer entry (gpt, bert, t5 builders) shares: reading the recipe's
model section against a config dataclass, the sizes the trainer asks for, and adapting a
megazoo.core.data dataset into a trainer source."""

from __future__ import annotations

import difflib
from dataclasses import fields
from typing import Callable

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.plan.flops import model_flops
from megazoo.core.plan.params import total_params
from megazoo.core.plan.shapes import ModelShape
from megazoo.core.plan.traits import ArchTraits, arch_traits
from megazoo.core.train.builder import Builder
from megazoo.core.train.config import ConfigError, check_type


def parse_model_section(model: dict, config_cls, default_arch: str) -> tuple[str, dict]:
    """(arch, checked keyword arguments for config_cls) of a recipe's `model:` section; an unknown
    key names the nearest valid one, a wrong type names the key."""
    model = dict(model)
    arch = model.pop("arch", default_arch)
    valid = {f.name: f for f in fields(config_cls) if f.name != "recompute"}
    nested = [k for k in model if k.startswith("moe.")]  # --set model.moe.top_k=4
    if nested and "moe" in valid:
        moe = dict(model.get("moe") or {})
        moe.update({k[len("moe."):]: model.pop(k) for k in nested})
        model["moe"] = moe
    for key, value in model.items():
        if key == "moe" and key in valid and isinstance(value, dict):
            model[key] = _moe_section(value)
            continue
        if key not in valid:
            close = difflib.get_close_matches(key, list(valid), n=1)
            hint = f"; did you mean `model.{close[0]}`?" if close else ""
            raise ConfigError(f"unknown key `model.{key}`{hint}")
        model[key] = check_type(f"model.{key}", value, valid[key].type)
    return arch, model


def _moe_section(values: dict) -> dict:
    """`model.moe` keys checked like the model's (MoEConfig's own checks give the value errors)."""
    from megazoo.core.nn.config import MoEConfig
    from megazoo.core.train.config_checks import fill_dataclass

    checked = fill_dataclass(MoEConfig, values, "model.moe", "config")
    try:
        MoEConfig(**{k: getattr(checked, k) for k in values})
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return {k: getattr(checked, k) for k in values}


class ModelBuilder(Builder):
    """Subclasses set `arch` and `config` (a TransformerConfig with to_dict), and state as class
    attributes what the model registry (zoo/registry.py) gives by name."""

    arch: str
    config: object
    config_class: type  # the config dataclass (from_dict)
    model_class: type  # the module of one model chunk
    hf_model_types: tuple[str, ...] = ()  # Hugging Face model types it converts to and from (zoo/hf)
    unused_ok: tuple[str, ...] = ()  # checkpoint tensors a task drops on purpose (train.init_from)

    @property
    def traits(self) -> ArchTraits:
        """What kind of model this is (core/plan/traits.py, keyed by the registered name)."""
        return arch_traits(self.arch)

    @property
    def context_parallel(self) -> bool:
        """Its stages take a sequence split over parallel.cp (checked before ranks start)."""
        return self.traits.context_parallel

    def load_weights(self, chunks, path, ctx) -> dict:
        """train.init_from: this rank's slices of the pretrained folder's tensors (zoo/pretrained.py)."""
        from megazoo.zoo.pretrained import load_into

        full = self.chunks(ParallelContext.single(), 0, device="meta")[0]
        return load_into(chunks, path, ctx, full, self.unused_ok)

    def weight_reader(self, path, ctx):
        """train.init_from under ZeRO-3: (a reader of the folder's tensors one at a time, None), or
        (None, why the folder is read whole) (zoo/pretrained.py)."""
        from megazoo.zoo.pretrained import open_reader

        full = self.chunks(ParallelContext.single(), 0, device="meta")[0]
        return open_reader(path, ctx, full, self.unused_ok)

    def shape(self) -> ModelShape:
        """The model as core/plan sees it; FLOPs and parameter counts come from it alone."""
        raise NotImplementedError

    def flops_per_iteration(self, batch: int, tp: int = 1, seq_length: int | None = None) -> float:
        return model_flops(self.shape(), batch, seq_length or self.config.seq_length, tp)

    def num_parameters(self, tp: int = 1) -> int:
        return total_params(self.shape(), tp)

    @property
    def hidden_size(self) -> int:
        return self.config.hidden_size

    @property
    def seq_length(self) -> int:
        return self.config.seq_length

    @property
    def vocab_size(self) -> int:
        return self.config.vocab_size

    def to_dict(self) -> dict:
        d = {"arch": self.arch, **self.config.to_dict()}
        d.pop("recompute")
        return d

    def check_sequence_parallel(self, parallel) -> None:
        moe = getattr(self.config, "moe", None)  # (and expert parallelism: the experts split evenly)
        if moe is not None and moe.num_experts % getattr(parallel, "ep", 1):
            raise ConfigError(f"parallel.ep={parallel.ep} must divide model.moe.num_experts={moe.num_experts}: "
                              f"each expert-parallel rank holds the same number of experts")
        if moe is not None and moe.ffn_hidden_size and moe.ffn_hidden_size % parallel.tp:
            raise ConfigError(f"parallel.tp={parallel.tp} must divide model.moe.ffn_hidden_size={moe.ffn_hidden_size} "
                              f"(each expert is split over tp like the dense MLP)")
        if parallel.sp and self.config.seq_length % parallel.tp:
            raise ConfigError(f"model.seq_length={self.config.seq_length} is not divisible by parallel.tp="
                              f"{parallel.tp} (sequence parallelism splits the sequence)")


class Samples:
    """A megazoo.core.data dataset as the trainer's source: global index -> convert(item), a dict
    of tensors (indices wrap around the dataset)."""

    def __init__(self, dataset, convert: Callable[[dict], dict]):
        self.dataset, self.convert = dataset, convert

    def __len__(self) -> int:
        return len(self.dataset)

    def get(self, index: int) -> dict:
        return self.convert(self.dataset[index % len(self.dataset)])
