"""Finding an architecture's model builder without importing the zoo (core never imports zoo).

Architectures register a builder in the entry-point group "megazoo.models" (pyproject.toml):
`gpt = "megazoo.zoo.gpt.builder:build"`. A builder is called as `build(model: dict, recompute: str)`
and returns an object with:

    to_dict() -> dict                     the fully resolved model config (with "arch")
    check_layout(parallel: ParallelConfig) raise ConfigError when the model cannot take the layout
    chunks(ctx, seed, device=None) -> list[nn.Module]
                                          this rank's model chunks (one per virtual pipeline stage),
                                          fp32, initialised layout-independently from `seed`
    flops_per_iteration(batch: int, tp: int) -> float   model FLOPs of one step of `batch` sequences
    num_parameters(tp: int = 1) -> int
    hidden_size, seq_length, vocab_size   ints
"""

from __future__ import annotations

import difflib
from importlib.metadata import entry_points

from megazoo.core.train.config import ConfigError


def available_architectures() -> dict:
    return {ep.name: ep for ep in entry_points(group="megazoo.models")}


def load_builder(model: dict, recompute: str = "none"):
    arch = model.get("arch")
    known = available_architectures()
    if arch not in known:
        close = difflib.get_close_matches(str(arch), known, n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        raise ConfigError(f"model.arch={arch!r} is not a known architecture{hint} (known: {', '.join(sorted(known))})")
    build = known[arch].load()
    return build(dict(model), recompute)
