"""The reader stages' model chunk: a BERT span reader and, end to end, the retriever's query tower,
as one module the core trainer trains (../towers.py routes rows the same way).

A micro-batch stacks the reader rows of its n questions (k passages each, `[CLS] question [SEP]
title [SEP] text [SEP]`) and, end to end, the n question rows of the query tower; `labels` says
which is which per row (READER or QUESTION). The output keeps the reader rows' start and end
logits and the questions' pooled vectors; the loss (loss.py) reads them with the rest of the
micro-batch (gold spans, the passages' fixed context vectors or retrieval prior). The state dict
names the parts `reader.*` and `query.*`. One pipeline stage (the parts are not split into stages);
tensor and data parallelism apply to both.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.train.config import ConfigError

READER, QUESTION = 0, 1


@dataclass
class ReaderOutput:
    start: torch.Tensor | None  # [reader rows, L] fp32 span start logits
    end: torch.Tensor | None  # [reader rows, L]
    query: torch.Tensor | None  # [questions, h] fp32 query vectors (end to end)


def _inputs(rows, input_ids, attention_mask, token_type_ids, trim: bool):
    ids, mask = input_ids[rows], attention_mask[rows]
    types = token_type_ids[rows] if token_type_ids is not None else None
    if trim:  # question rows are padded to the reader rows' length: cut to their own (multiple of 8)
        n = min(ids.shape[1], -(-int(mask.sum(1).max()) // 8) * 8)
        ids, mask, types = ids[:, :n], mask[:, :n], types[:, :n] if types is not None else None
    return ids, (mask if not bool(mask.all()) else None), types


class ReaderModel(nn.Module):
    def __init__(self, reader: nn.Module, query: nn.Module | None = None):
        super().__init__()
        self.reader = reader
        self.query = query

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None, **_):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        is_q = (labels == QUESTION) if labels is not None else torch.zeros(input_ids.shape[0], dtype=torch.bool)
        is_q = is_q.to(input_ids.device)
        start = end = query = None
        if not bool(is_q.all()):
            ids, mask, types = _inputs(~is_q, input_ids, attention_mask, token_type_ids, trim=False)
            logits = self.reader(ids, attention_mask=mask, token_type_ids=types).logits.float()
            start, end = logits[..., 0], logits[..., 1]
        if bool(is_q.any()):
            if self.query is None:
                raise ValueError("question rows need the query tower (task.component e2e or mss)")
            ids, mask, types = _inputs(is_q, input_ids, attention_mask, token_type_ids, trim=True)
            query = self.query(ids, attention_mask=mask, token_type_ids=types).embedding.float()
        return ReaderOutput(start, end, query)


def check_layout(parallel) -> None:
    if parallel.pp > 1 or getattr(parallel, "vpp", 1) > 1:
        raise ConfigError(f"the retrieval reader runs its reader and query tower on one pipeline stage; parallel.pp="
                          f"{parallel.pp} splits them: use tensor or data parallelism")


def make_reader_model(reader_config, query_config, ctx: ParallelContext, seed: int, device=None) -> ReaderModel:
    """The reader (from `seed`) and, when `query_config` is given, the query tower (seed + 1)."""
    from megazoo.zoo.bert.model import BertModel

    def make(cfg, s):
        return BertModel(cfg, ctx, dtype=torch.float32, device=device or ctx.device).initialize(s)

    return ReaderModel(make(reader_config, seed), make(query_config, seed + 1) if query_config is not None else None)


@torch.no_grad()
def load_tower(module: nn.Module, path, ctx: ParallelContext, full_model, unused_ok: tuple[str, ...], tower: str,
               prefix: str, key: str) -> dict:
    """Fill `module` (this rank's tensor-parallel slices) from a BERT folder: a plain encoder, or the
    `tower` (query | context) of a two-tower retriever. A wrong shape is a ConfigError naming `key`;
    the report names tensors with `prefix`."""
    from megazoo.core.parallel.init import local_slice
    from megazoo.tasks.retrieval.towers import tower_state
    from megazoo.zoo.hf.shard import expected_shapes
    from megazoo.zoo.pretrained import read_full

    _, _, state = read_full(path)
    sub = tower_state(state, tower)
    known = {n: tuple(s) for n, s in expected_shapes(full_model).items()}
    for k, shape in known.items():
        if k in sub and tuple(sub[k].shape) != shape:
            raise ConfigError(f"{key}={str(path)!r}: tensor {k!r} has shape {tuple(sub[k].shape)}, the {prefix} "
                              f"needs {shape}; the model config differs from the checkpoint's")
    for k, p in module.named_parameters():
        if k in sub:
            p.copy_(local_slice(sub[k].to(p.dtype), p, ctx.tp, ctx.tp_rank))
    return {"missing": sorted(f"{prefix}.{k}" for k in known if k not in sub),
            "unused": sorted(f"{prefix}.{k}" for k in sub if k not in known and not k.startswith(unused_ok))}
