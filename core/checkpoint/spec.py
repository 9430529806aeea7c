"""How a rank's tensors map onto the global ("master") tensors a checkpoint stores.

A checkpoint stores every tensor in its global shape: the TP=1 parameter of the real vocabulary
(padding rows dropped), the optimizer state of that parameter in the same shape. A rank describes
what it holds with a `ShardSpec`:

- a tensor-parallel slice: `offsets` is where the local tensor starts in the global tensor; local
  elements that fall outside the global shape (vocabulary padding) are not saved and are left
  untouched on load;
- a ZeRO-1 shard: the local tensor is the 1-D range `flat_range` of the row-major flattening of a
  box of shape `box_shape` placed at `offsets` (the rank's tp slice of the parameter). Such a range
  is cut into a few rectangular pieces (a partial first row, whole rows, a partial last row, per
  dimension), which is what a chunked checkpoint format can store.

Every piece becomes one chunk of torch.distributed.checkpoint (DCP), whose reader intersects the
saved chunks with the chunks a rank asks for: that intersection is the resharding.

A state is a nested dict of str keys. Leaves:
  Sharded(tensor, spec)   a piece of a global tensor (model parameters, optimizer state)
  torch.Tensor            replicated: the same on every rank, saved once
  PerRank(value)          a tensor or JSON value (or dict of them) that differs per rank (RNG states);
                          restored only when the layout is unchanged
  None/bool/int/float/str/list  plain values, stored as JSON, identical on every rank
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import torch
from torch import nn

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.init import master_shape

SEP = "/"  # joins nested state keys; parameter names keep their dots


@dataclass(frozen=True)
class ShardSpec:
    """Where this rank's tensor lies in a global tensor of shape `global_shape`."""

    global_shape: tuple[int, ...]
    offsets: tuple[int, ...]
    box_shape: tuple[int, ...] | None = None  # with flat_range: the shape the range is a flattening of
    flat_range: tuple[int, int] | None = None  # the local tensor is elements [start, stop) of that box

    def __post_init__(self):
        if len(self.offsets) != len(self.global_shape):
            raise ValueError(f"offsets {self.offsets} do not match global shape {self.global_shape}")
        if (self.flat_range is None) != (self.box_shape is None):
            raise ValueError("flat_range and box_shape go together")


@dataclass
class Sharded:
    """A leaf: `tensor` is this rank's piece of a global tensor described by `spec`."""

    tensor: torch.Tensor
    spec: ShardSpec


@dataclass
class PerRank:
    """A leaf whose value differs per rank (a tensor, a JSON value, or a dict of them)."""

    value: Any


@dataclass
class Piece:
    """One rectangular chunk: global `offsets`/`sizes` and the local view holding its data."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    view: torch.Tensor


@dataclass
class Entry:
    """A flattened tensor leaf: its global shape and this rank's pieces (possibly none)."""

    key: str
    global_shape: tuple[int, ...]
    dtype: torch.dtype
    pieces: list[Piece]


# ---------------------------------------------------------------------------------------------
# specs for model parameters

def param_spec(param: nn.Parameter, ctx: ParallelContext) -> ShardSpec:
    """The tp slice `param` holds of its master tensor (vocabulary padding falls outside)."""
    offsets = [0] * param.dim()
    tp_dim = getattr(param, "tp_dim", None)
    if tp_dim is not None and ctx.tp > 1:
        offsets[tp_dim] = ctx.tp_rank * param.shape[tp_dim]
    ep_dim = getattr(param, "ep_dim", None)  # MoE experts: this ep rank's block of experts
    if ep_dim is not None and param.ep > 1:
        offsets[ep_dim] = param.ep_rank * param.shape[ep_dim]
    return ShardSpec(tuple(master_shape(param, ctx.tp)), tuple(offsets))


def flat_param_spec(param: nn.Parameter, ctx: ParallelContext, start: int, stop: int) -> ShardSpec:
    """A ZeRO-1 shard: elements [start, stop) of the flattened local (tp-sliced) `param`."""
    base = param_spec(param, ctx)
    if not 0 <= start <= stop <= param.numel():
        raise ValueError(f"flat range [{start}, {stop}) outside a parameter of {param.numel()} elements")
    return ShardSpec(base.global_shape, base.offsets, tuple(param.shape), (start, stop))


def checkpoint_name(name: str, param: nn.Parameter) -> str:
    """The stored name of a parameter: a tied output-embedding copy on the last pipeline stage is
    stored (and loaded) as the input embedding it mirrors, so checkpoints do not depend on pp."""
    if getattr(param, "shared_embedding", False) and getattr(param, "init_name", None):
        return param.init_name
    return name


def named_parameters(chunks: nn.Module | Iterable[nn.Module]) -> dict[str, nn.Parameter]:
    """Stored name -> parameter over this rank's model chunks (layer names are global)."""
    if isinstance(chunks, nn.Module):
        chunks = [chunks]
    out: dict[str, nn.Parameter] = {}
    for chunk in chunks:
        for name, p in chunk.named_parameters():
            key = checkpoint_name(name, p)
            if key in out:
                raise ValueError(f"parameter {key!r} appears twice among this rank's model chunks")
            out[key] = p
    return out


def model_state(chunks: nn.Module | Iterable[nn.Module], ctx: ParallelContext) -> dict[str, Sharded]:
    """The model part of a checkpoint state: stored name -> Sharded parameter (filled in place)."""
    return {name: Sharded(p.data, param_spec(p, ctx)) for name, p in named_parameters(chunks).items()}


@torch.no_grad()
def copy_state(target, source) -> None:
    """Copy the tensors of a loaded state into `target`'s (Sharded views or tensors, nested in
    dicts and PerRank) wherever `source` has them; a tensor that already is the target's own
    storage (the loader filled the view in place) is left alone."""
    if isinstance(target, dict):
        for k, v in target.items():
            if k in source:
                copy_state(v, source[k])
        return
    if isinstance(target, PerRank):
        return copy_state(target.value, source.value if isinstance(source, PerRank) else source)
    t = target.tensor if isinstance(target, Sharded) else target
    s = source.tensor if isinstance(source, Sharded) else source
    if isinstance(t, torch.Tensor) and isinstance(s, torch.Tensor) and t.data_ptr() != s.data_ptr():
        t.copy_(s)


def rng_state(tracker=None, trackers: dict | None = None) -> PerRank:
    """CPU, CUDA and RNG-tracker generator states of this rank, as a PerRank leaf: one model's
    `tracker` is stored under "tracker", several (a trainer's chunks, by key) under "trackers/<key>".
    The one place RNG streams are saved (restored by set_rng_state)."""
    value = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        value["cuda"] = torch.cuda.get_rng_state()
    if tracker is not None:
        value["tracker"] = {k: s.clone() for k, s in tracker.states().items()}
    if trackers:
        value["trackers"] = {key: {k: s.clone() for k, s in t.states().items()} for key, t in trackers.items()}
    return PerRank(value)


def set_rng_state(value: dict, tracker=None, trackers: dict | None = None) -> None:
    """Restore what `rng_state` saved (the loaded PerRank value, or its dict); a tracker whose
    state was not saved keeps its own."""
    if isinstance(value, PerRank):
        value = value.value
    torch.set_rng_state(value["cpu"])
    if "cuda" in value and torch.cuda.is_available():
        torch.cuda.set_rng_state(value["cuda"])
    if tracker is not None and "tracker" in value:
        tracker.set_states(value["tracker"])
    for key, t in (trackers or {}).items():
        saved = value.get("trackers", {}).get(key)
        if saved is not None:
            t.set_states(saved)


# ---------------------------------------------------------------------------------------------
# pieces

def flat_boxes(shape: tuple[int, ...], start: int, stop: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Cut elements [start, stop) of a row-major `shape` into rectangular boxes (offsets, sizes),
    in flat order; each box is itself contiguous in that order."""
    if start >= stop:
        return []
    if not shape:
        return [((), ())]
    inner = math.prod(shape[1:])
    rest = tuple(shape[1:])
    r0, c0 = divmod(start, inner)
    r1, c1 = divmod(stop, inner)
    out = []
    if c0 and r0 == r1:  # inside one row
        return [((r0,) + o, (1,) + s) for o, s in flat_boxes(rest, c0, c1)]
    if c0:  # the tail of a partial first row
        out += [((r0,) + o, (1,) + s) for o, s in flat_boxes(rest, c0, inner)]
        r0 += 1
    if r1 > r0:
        out.append(((r0,) + (0,) * len(rest), (r1 - r0,) + rest))
    if c1:  # the head of a partial last row
        out += [((r1,) + o, (1,) + s) for o, s in flat_boxes(rest, 0, c1)]
    return out


def _clip(offsets, sizes, view, global_shape) -> Piece | None:
    """Drop what lies outside the global tensor (vocabulary padding); None when nothing is left."""
    sizes = list(sizes)
    for d, (o, g) in enumerate(zip(offsets, global_shape)):
        keep = max(0, min(sizes[d], g - o))
        if keep < sizes[d]:
            view = view.narrow(d, 0, keep)
            sizes[d] = keep
    if any(s == 0 for s in sizes):
        return None
    return Piece(tuple(offsets), tuple(sizes), view)


def pieces(tensor: torch.Tensor, spec: ShardSpec) -> list[Piece]:
    """The rectangular chunks of the global tensor that `tensor` holds, as views of it."""
    out: list[Piece] = []
    if spec.flat_range is None:
        if tensor.dim() != len(spec.global_shape):
            raise ValueError(f"a {tensor.dim()}-d tensor cannot be a piece of global shape {spec.global_shape}")
        p = _clip(spec.offsets, tuple(tensor.shape), tensor, spec.global_shape)
        return [p] if p else []
    start, stop = spec.flat_range
    if tensor.dim() != 1 or tensor.numel() != stop - start:
        raise ValueError(f"a flat shard of range {spec.flat_range} must be 1-D with {stop - start} elements, "
                         f"got shape {tuple(tensor.shape)}")
    pos = 0
    for off, size in flat_boxes(spec.box_shape, start, stop):
        n = math.prod(size)
        view = tensor[pos:pos + n].view(size)
        pos += n
        p = _clip(tuple(a + b for a, b in zip(spec.offsets, off)), size, view, spec.global_shape)
        if p:
            out.append(p)
    return out


# ---------------------------------------------------------------------------------------------
# flattening a state

JSON_TYPES = (type(None), bool, int, float, str)


def _is_json(value) -> bool:
    if isinstance(value, JSON_TYPES):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v) for k, v in value.items())
    return False


@dataclass
class Flat:
    tensors: dict[str, Entry]  # global tensors (sharded or replicated)
    rank_tensors: dict[str, Entry]  # this rank's own tensors (keys without the rank prefix)
    json: dict[str, Any]
    rank_json: dict[str, Any]


def flatten(state: dict, prefix: str = "", per_rank: bool = False, out: Flat | None = None) -> Flat:
    out = out or Flat({}, {}, {}, {})
    if not isinstance(state, dict):
        raise TypeError(f"checkpoint state {prefix or '(root)'} must be a dict, got {type(state).__name__}")
    for k, v in state.items():
        if not isinstance(k, str) or SEP in k or not k:
            raise ValueError(f"checkpoint state key {k!r} under {prefix or '(root)'} must be a non-empty "
                             f"str without {SEP!r}")
        key = prefix + k
        if isinstance(v, PerRank):
            if per_rank:
                raise ValueError(f"{key}: PerRank inside PerRank")
            if isinstance(v.value, dict):
                flatten(v.value, key + SEP, True, out)
            else:
                _leaf(key, v.value, True, out)
        elif isinstance(v, dict) and not _is_json_dict_leaf(v):
            flatten(v, key + SEP, per_rank, out)
        else:
            _leaf(key, v, per_rank, out)
    return out


def _is_json_dict_leaf(d: dict) -> bool:
    """An empty dict is kept as a JSON value (so it round-trips); others are walked."""
    return len(d) == 0


def _leaf(key: str, v, per_rank: bool, out: Flat) -> None:
    if isinstance(v, Sharded):
        if per_rank:
            raise ValueError(f"{key}: a Sharded tensor cannot be per-rank")
        out.tensors[key] = Entry(key, tuple(v.spec.global_shape), v.tensor.dtype, pieces(v.tensor, v.spec))
    elif isinstance(v, torch.Tensor):
        shape = tuple(v.shape)
        entry = Entry(key, shape, v.dtype, [Piece((0,) * len(shape), shape, v)] if v.numel() else [])
        (out.rank_tensors if per_rank else out.tensors)[key] = entry
    elif _is_json(v):
        (out.rank_json if per_rank else out.json)[key] = v
    else:
        raise TypeError(f"checkpoint state {key}: cannot store a {type(v).__name__}; use tensors, "
                        f"Sharded, PerRank or JSON values (None, bool, int, float, str, list, dict)")


def rebuild(template: dict, values: dict[str, Any], prefix: str = "") -> dict:
    """A copy of `template` with JSON leaves replaced by `values[key]` (tensors are filled in place)."""
    out = {}
    for k, v in template.items():
        key = prefix + k
        if isinstance(v, PerRank):
            inner = rebuild(v.value, values, key + SEP) if isinstance(v.value, dict) else values.get(key, v.value)
            out[k] = PerRank(inner)
        elif isinstance(v, dict) and not _is_json_dict_leaf(v):
            out[k] = rebuild(v, values, key + SEP)
        elif isinstance(v, (Sharded, torch.Tensor)):
            out[k] = v
        else:
            out[k] = values.get(key, v)
    return out
