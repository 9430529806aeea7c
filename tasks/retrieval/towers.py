"""Separate query and context towers (`task.shared_towers: false`), as DPR and Sachan et al. train
them: two BERT encoders of the same config, both initialised from the same pretrained folder.

The pair is one model chunk whose forward routes each row of a micro-batch by its label: rows with
a label (the questions: `collate` gives them their positive's index, `embed` gives them 0) go
through the query tower, the others (passages, label -100) through the context tower; the output's
`embedding` keeps the rows' order, so the loss and the metrics are the shared tower's code. The
state dict names the towers `query.*` and `context.*`; `train.init_from` fills both towers from a
plain encoder, or each from its own prefix when the folder holds two towers. One pipeline stage
only (the towers are not split into stages); tensor and data parallelism apply to both.
"""

from __future__ import annotations

import torch
from torch import nn

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.train.config import ConfigError
from megazoo.eval.question_tower import has_towers, tower_state  # noqa: F401  (the one rule, shared with MSDP)
from megazoo.zoo.bert.model import BertModel, BertOutput

IGNORE = -100
TOWERS = ("query", "context")


class TwoTowers(nn.Module):
    def __init__(self, query: BertModel, context: BertModel):
        super().__init__()
        self.query, self.context = query, context

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None, **_):
        is_q = (labels != IGNORE) if labels is not None else torch.zeros(input_ids.shape[0], dtype=torch.bool)
        is_q = is_q.to(input_ids.device)
        parts = []
        for tower, rows in ((self.query, is_q), (self.context, ~is_q)):
            if not bool(rows.any()):
                continue
            mask = attention_mask[rows] if attention_mask is not None else None
            types = token_type_ids[rows] if token_type_ids is not None else None
            parts.append((rows, tower(input_ids[rows], attention_mask=mask, token_type_ids=types).embedding))
        h = parts[0][1].shape[-1]
        emb = parts[0][1].new_zeros((input_ids.shape[0], h))
        for rows, e in parts:
            emb = emb.index_put((rows.nonzero().squeeze(1),), e)
        return BertOutput(hidden=None, embedding=emb)


def check_layout(parallel) -> None:
    if parallel.pp > 1 or getattr(parallel, "vpp", 1) > 1:
        raise ConfigError(f"task.shared_towers=false runs the two towers on one pipeline stage; parallel.pp="
                          f"{parallel.pp} splits the encoder: use tensor or data parallelism, or shared towers")


def make_towers(config, ctx: ParallelContext, seed: int, device=None) -> TwoTowers:
    """Both towers of `config` on this rank, the query tower from `seed`, the context one from seed + 1."""
    made = [BertModel(config, ctx, dtype=torch.float32, device=device or ctx.device).initialize(seed + i)
            for i in range(2)]
    return TwoTowers(*made)


@torch.no_grad()
def load_towers(towers: TwoTowers, path, ctx: ParallelContext, full_model, unused_ok: tuple[str, ...]) -> dict:
    """train.init_from for two towers: each tower's slices of its tensors (zoo/pretrained.py's rules:
    a wrong shape or a tensor the encoder lacks is an error, dropped heads are listed as unused)."""
    from megazoo.core.parallel.init import local_slice
    from megazoo.zoo.hf.shard import expected_shapes
    from megazoo.zoo.pretrained import read_full

    _, _, state = read_full(path)
    known = {n: tuple(s) for n, s in expected_shapes(full_model).items()}
    missing, unused = set(), set()
    for name in TOWERS:
        sub = tower_state(state, name)
        unexpected = [k for k in sub if k not in known and not k.startswith(unused_ok)]
        if unexpected:
            raise ConfigError(f"train.init_from={str(path)!r}: tensor {unexpected[0]!r} has no place in the {name} "
                              f"tower; start from a BERT encoder")
        for k, shape in known.items():
            if k in sub and tuple(sub[k].shape) != shape:
                raise ConfigError(f"train.init_from={str(path)!r}: tensor {k!r} has shape {tuple(sub[k].shape)}, "
                                  f"the {name} tower needs {shape}; the model config differs from the checkpoint's")
        for k, p in getattr(towers, name).named_parameters():
            if k in sub:
                p.copy_(local_slice(sub[k].to(p.dtype), p, ctx.tp, ctx.tp_rank))
        missing |= {f"{name}.{k}" for k in known if k not in sub}
        unused |= {k for k in sub if k not in known}
    return {"missing": sorted(missing), "unused": sorted(unused)}
