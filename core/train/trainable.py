"""`train.trainable`: which parameters a run trains (all, or those matching name patterns).

Patterns are shell-style (fnmatch, case-sensitive) and match the WHOLE stored parameter name, the
name a checkpoint uses: global layer indices, the same at every tp/pp/vpp layout, e.g.
`layers.3.adapter1.down.weight`, `embed.weight`, `final_norm.weight`. So "*adapter*" trains every
adapter, "layers.*.norm?.*" the layer norms, and a bare "adapter" matches nothing (it is not a
whole name; the error then suggests "*adapter*"). The value is "all" (the default), one pattern,
a comma-separated string of patterns, or a list of them.

A tied output head on the last pipeline stage is stored (and matched) as the input embedding it
copies, so both copies are frozen or trained together. Every pattern must match some parameter of
the model (on some rank): a pattern matching nothing is a typo, reported on every rank as one
ConfigError naming it. Frozen parameters get requires_grad=False; the optimizer leaves them out
(no gradient buffer, no Adam state, no weight decay), so they stay bit-equal through training.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import torch
import torch.distributed as dist
from torch import nn

from megazoo.core.checkpoint.spec import checkpoint_name
from megazoo.core.train.config import ConfigError


def parse_patterns(trainable) -> list[str] | None:
    """The patterns of a `train.trainable` value; None for "all"."""
    if trainable is None or trainable == "all" or trainable == ["all"]:
        return None
    if isinstance(trainable, str):
        # an override like `train.trainable=[*a*,*b*]` is not valid YAML (`*` starts an alias), so
        # it arrives as the raw text
        items = trainable.strip().removeprefix("[").removesuffix("]").split(",")
    elif isinstance(trainable, (list, tuple)):
        items = list(trainable)
    else:
        raise ConfigError(f"train.trainable must be \"all\" or parameter-name patterns (a string or a list), "
                          f"got {trainable!r}")
    patterns = [str(p).strip().strip("'\"") for p in items]
    patterns = [p for p in patterns if p]
    if not patterns:
        raise ConfigError(f"train.trainable={trainable!r} names no pattern; use \"all\" or e.g. [\"*adapter*\"]")
    return patterns


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _sum_over_world(values: list[int], device) -> list[int]:
    t = torch.tensor(values, dtype=torch.int64, device=device)
    if _distributed():
        dist.all_reduce(t)
    return [int(v) for v in t.tolist()]


def _examples(names: list[str], k: int = 6) -> list[str]:
    """A few parameter names (rank 0's view, so every rank's message is the same)."""
    mine = names[:k]
    if _distributed():
        everyone = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, mine)
        mine = everyone[0]
    return mine


def unmatched_message(patterns: list[str], unmatched: list[str], examples: list[str]) -> str:
    hints = [f"\"*{p}*\"" for p in unmatched if not any(c in p for c in "*?[")]
    hint = f" (patterns match whole names: did you mean {', '.join(hints)}?)" if hints else ""
    return (f"train.trainable: pattern(s) {', '.join(repr(p) for p in unmatched)} match no parameter of the model"
            f"{hint}. Parameter names look like {', '.join(examples)}. Patterns given: {patterns}")


def apply_trainable(chunks: list[nn.Module], trainable="all") -> list[str]:
    """Freeze every parameter of `chunks` whose stored name matches none of the patterns; return
    this rank's names left trainable. "all" (the default) trains everything.

    Collective when torch.distributed is initialised (every rank must call it): pattern matches
    are counted over the whole world, since a pipeline stage may hold none of a pattern's
    parameters. Every rank raises the same ConfigError when a pattern matches nothing anywhere."""
    named = [(checkpoint_name(n, p), p) for c in chunks for n, p in c.named_parameters()]
    patterns = parse_patterns(trainable)
    if patterns is None:
        return [n for n, p in named if p.requires_grad]
    hits = [sum(fnmatchcase(n, pat) for n, _ in named) for pat in patterns]
    device = next((p.device for _, p in named if not p.is_meta), torch.device("cpu"))
    hits = _sum_over_world(hits, device)
    unmatched = [pat for pat, h in zip(patterns, hits) if h == 0]
    if unmatched:
        raise ConfigError(unmatched_message(patterns, unmatched, _examples([n for n, _ in named])))
    kept = []
    for name, p in named:
        train = any(fnmatchcase(name, pat) for pat in patterns)
        p.requires_grad_(train)
        if train:
            kept.append(name)
    return kept

