"""The checks every config piece shares: an unknown key names the nearest valid one, a value of the
wrong type says which type was expected.

Their own module (beside errors.py) so that config.py, the entry-point lookup in models.py, the
zoo's builders and the task packages use one definition without importing config.py.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
from typing import Any

from megazoo.core.train.errors import ConfigError


def unknown_key(key: str, valid: list[str], where: str) -> ConfigError:
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    if not close:  # try the last component alone (e.g. train.setps -> train.steps)
        tail = key.rsplit(".", 1)[-1]
        close = [k for k in valid if difflib.get_close_matches(tail, [k.rsplit(".", 1)[-1]], n=1, cutoff=0.7)][:1]
    hint = f"; did you mean `{close[0]}`?" if close else ""
    return ConfigError(f"{where}: unknown key `{key}`{hint}")


def check_type(key: str, value: Any, annotation, where: str = "config") -> Any:
    """Accept `value` for a field annotated `annotation` (a type or its string form) or raise."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    options = [t.strip() for t in text.split("|")]
    if value is None:
        if "None" in options or "Any" in options:
            return None
        raise ConfigError(f"{where}: {key} must be {text}, got null")
    for opt in options:
        if opt == "Any":
            return value
        if opt == "bool" and isinstance(value, bool):
            return value
        if opt == "int" and isinstance(value, int) and not isinstance(value, bool):
            return value
        if opt == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value):  # YAML's .nan and .inf are floats: no setting (a NaN compares
                raise ConfigError(f"{where}: {key} must be a finite number, got {value}")  # false, turning checks off)
            return float(value)
        if opt in ("int", "float") and isinstance(value, str):  # YAML 1.1 reads 1e-3 as a string
            try:
                number = float(value)
            except ValueError:
                continue
            if not math.isfinite(number):  # "nan", "inf": words, not the number a user meant to type
                continue
            if opt == "float":
                return number
            if number.is_integer():
                return int(number)
        if opt == "str" and isinstance(value, str):
            return value
        if opt.startswith(("list", "tuple")) and isinstance(value, (list, tuple)):
            return list(value)
    raise ConfigError(f"{where}: {key} must be {text}, got {value!r} ({type(value).__name__})")


def fill_dataclass(cls, values: dict, prefix: str, where: str, unchecked: tuple[str, ...] = ()):
    """cls() with `values` set, each key known (an unknown one names the nearest) and of its field's
    type (keys in `unchecked` are taken as they are, for the caller to check); e.g. a task's settings
    from a recipe's `task:` section, with prefix "task" and where "task race"."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    out = cls()
    for key, value in values.items():
        if key not in known:
            raise unknown_key(f"{prefix}.{key}", [f"{prefix}.{k}" for k in known], where)
        setattr(out, key, value if key in unchecked else check_type(f"{prefix}.{key}", value, known[key].type))
    return out


def check_context_parallel(cfg, builder, chunks=None) -> None:
    """What parallel.cp > 1 needs, checked at startup (one line each): a sequence length that splits
    into 2 x cp equal chunks (and each rank's part into tp pieces under sp), a model whose stages
    say they take a split sequence (`context_parallel = True`: the GPT/Llama decoders), no task
    package (their collates and heads read whole sequences), no attention dropout."""
    p = cfg.parallel
    if p.cp == 1:
        return
    from megazoo.core.parallel.cp_split import ContextParallelError, check_divisible

    seq = builder.seq_length
    try:
        check_divisible(seq, p.cp)
    except ContextParallelError as e:
        raise ConfigError(str(e)) from None
    if p.sp and (seq // p.cp) % p.tp:
        raise ConfigError(f"model.seq_length={seq} / parallel.cp={p.cp} = {seq // p.cp} tokens per cp rank is not "
                          f"divisible by parallel.tp={p.tp} (sequence parallelism splits each cp rank's part)")
    model = builder.to_dict()
    if cfg.task:
        raise ConfigError(f"parallel.cp={p.cp}: task {cfg.task.get('name')!r} does not support context "
                          "parallelism yet (its batches and heads need whole sequences); set parallel.cp=1")
    supported = (all(getattr(c, "context_parallel", False) for c in chunks) if chunks is not None
                 else getattr(builder, "context_parallel", False))
    if not supported:
        raise ConfigError(f"parallel.cp={p.cp}: model.arch={model.get('arch')!r} does not support context "
                          "parallelism yet (only the gpt and llama decoders do); set parallel.cp=1")
    if model.get("attention_dropout"):
        raise ConfigError(f"parallel.cp={p.cp}: model.attention_dropout={model['attention_dropout']} is not "
                          "supported under context parallelism (ring attention has no dropout); set it to 0")


def moe_layers(model: dict) -> list[int]:
    """The (0-based) layers that get experts under `model.moe` (MoEConfig.is_moe_layer: every
    `every`-th layer); [] for a dense model."""
    moe = model.get("moe")
    if not moe:
        return []
    every = moe["every"] if isinstance(moe, dict) else moe.every
    return [n for n in range(int(model.get("num_layers") or 0)) if (n + 1) % every == 0]


def check_takes_effect(cfg, model: dict) -> None:
    """Settings that would be accepted and then do nothing are refused with the reason: experts on no
    layer (model.moe.every larger than the model), expert parallelism on a model without experts."""
    moe = model.get("moe")
    layers = int(model.get("num_layers") or 0)
    if moe and not moe_layers(model):
        every = moe["every"] if isinstance(moe, dict) else moe.every
        raise ConfigError(f"model.moe.every={every} with model.num_layers={layers}: no layer gets experts (experts go "
                          f"on every {every}th layer, the first being layer {every - 1}), so the model would be dense; "
                          f"set model.moe.every to at most {layers}, or drop model.moe for a dense model")
    ep = getattr(cfg.parallel, "ep", 1)
    if ep > 1 and not moe:
        raise ConfigError(f"parallel.ep={ep}: model.arch={model.get('arch')!r} has no experts (model.moe is unset), so "
                          f"expert parallelism would split nothing; set parallel.ep=1, or give the model experts "
                          f"(model.moe.num_experts=...)")


# the bytes a parameter needs at the least while training: its weight and gradient in the compute
# dtype and Adam's two fp32 moments (fp32 master weights and activations come on top)
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


def training_bytes(cfg, builder, world_size: int, params: float | None = None) -> tuple[float, str]:
    """A lower bound of the memory this run takes on all its ranks, and how it breaks down: the model
    states every step holds (weights, gradients, Adam moments; each data-parallel replica holds its
    copy, ZeRO-1 shards the moments) and one layer's input for one micro-batch per replica. Other
    activations are left out on purpose: they depend on the real sample lengths (task samples are
    often far shorter than model.seq_length), on recomputation and on the chunked cross-entropy, so
    counting them (the logits above all) would refuse runs that fit."""
    p, t = cfg.parallel, cfg.train
    dp = max(1, world_size // (p.tp * p.pp * getattr(p, "cp", 1)))
    width = DTYPE_BYTES.get(cfg.precision.dtype, 4)
    params = float(builder.num_parameters() if params is None else params)
    moments = 8 * params * (1 if cfg.optim.distributed else dp)
    states = 2 * width * params * dp + moments
    tokens = float(t.micro_batch) * float(builder.seq_length) * dp
    acts = tokens * width * float(builder.hidden_size)
    return states + acts, (f"{params:,.0f} parameters x dp {dp}: {states / 2**30:,.1f} GiB of weights, gradients "
                           f"and Adam moments, and {acts / 2**30:,.1f} GiB for one layer's input of micro-batches of "
                           f"{t.micro_batch} x {int(builder.seq_length)} tokens")


def check_memory(cfg, builder, world_size: int) -> None:
    """Refuse a run whose sizes (model.vocab_size, hidden_size, num_layers, adapter_size,
    moe.num_experts, ...) need more memory for the model states alone than this machine has, before
    anything is allocated: on CPUs the ranks started here share its memory; on GPUs each rank has one."""
    from megazoo.core.argtypes import available_memory, check_fits

    # first a floor from the model's widths alone (each layer's attention projections, 4 h^2, and the
    # embedding), so an absurd num_layers is refused without counting its layers one by one
    model = builder.to_dict()
    h, layers = float(builder.hidden_size), float(model.get("num_layers") or 0)
    need, what = training_bytes(cfg, builder, world_size, params=layers * 4 * h * h + float(builder.vocab_size) * h)
    if need <= 64 * available_memory():
        need, what = training_bytes(cfg, builder, world_size)
    fix = ("make the model or the micro-batch smaller (model.hidden_size, num_layers, vocab_size, adapter_size, "
           "moe.num_experts; train.micro_batch), or split it over more ranks (parallel.tp, parallel.pp)")
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a dependency
        gpu = False
    if gpu:
        per_rank = need / world_size
        have = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory
        if per_rank > have:
            raise ConfigError(f"this run needs at least {per_rank / 2**30:,.1f} GiB of memory on each GPU "
                              f"({what}) and a GPU has {have / 2**30:,.1f} GiB; {fix}")
        return
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))  # ranks on this machine (torchrun)
    share = need * min(local, world_size) / world_size
    if share > available_memory():
        try:
            check_fits(share, f"this run ({what})", fix)
        except ValueError as e:
            raise ConfigError(str(e)) from None



# integer settings with no size of their own: bounds that no real run reaches, and far below what
# would overflow torch (a seed is a 64-bit integer) or a counter. Sizes that allocate are checked
# by check_memory instead.
INT_BOUNDS = {
    "train.steps": (1, 10**12), "train.seed": (0, 2**63 - 1), "train.warmup": (0, 10**12),
    "train.eval_interval": (0, 10**12), "train.eval_iters": (1, 10**9), "train.log_interval": (1, 10**12),
    "train.epochs": (0, 10**9), "train.micro_batch": (1, 10**9), "train.global_batch": (1, 10**12),
    "checkpoint.interval": (0, 10**12), "checkpoint.keep": (1, 10**6), "optim.bucket_size": (1, 2**40),
    "precision.growth_interval": (1, 10**12), "precision.hysteresis": (1, 10**9),
}


def check_int_bounds(cfg) -> None:
    for key, (lo, hi) in INT_BOUNDS.items():
        section, name = key.split(".")
        value = getattr(getattr(cfg, section), name)
        if isinstance(value, int) and not lo <= value <= hi:
            raise ConfigError(f"{key} must be between {lo:,} and {hi:,}, got {value:,}")
