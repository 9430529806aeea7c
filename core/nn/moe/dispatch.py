"""Token dispatch and combine: every kept (token, expert) assignment becomes one row, the rows are
sorted by expert, computed by their expert, weighted by the router and summed back into their token.

With expert parallelism the rows sorted by global expert are already grouped by the ep rank that
owns the expert (consecutive blocks of num_experts / ep): one all-to-all with uneven split sizes
sends each block to its owner, the received rows are regrouped from (source rank, expert) to
(expert, source rank) for the grouped GEMM, and the reverse path brings the outputs home. The order
of every sum is the one-process order up to the data-parallel split, so layouts agree to rounding.
"""

from __future__ import annotations

import torch

from megazoo.core.nn.moe.alltoall import all_to_all, exchange_counts
from megazoo.core.nn.moe.experts import Experts
from megazoo.core.parallel.context import ParallelContext


def _compute_remote(rows: torch.Tensor, counts: torch.Tensor, experts: Experts, ctx: ParallelContext) -> torch.Tensor:
    """rows sorted by global expert -> their expert outputs, the experts living on the ep group's ranks."""
    ep, n = ctx.ep, experts.num_local
    send_counts = counts.view(ep, n)
    recv_counts = exchange_counts(send_counts, ctx.ep_group)  # [source rank, local expert]
    send, recv = send_counts.sum(1).tolist(), recv_counts.sum(1).tolist()
    got = all_to_all(rows, send, recv, ctx.ep_group)
    segment = torch.repeat_interleave(torch.arange(ep * n, device=rows.device), recv_counts.reshape(-1),
                                      output_size=got.shape[0])
    perm = torch.argsort((segment % n) * ep + segment // n, stable=True)  # (source, expert) -> (expert, source)
    out = experts(got.index_select(0, perm), recv_counts.sum(0).tolist())
    out = out.index_select(0, torch.argsort(perm))
    return all_to_all(out, recv, send, ctx.ep_group)


def dispatch_combine(tokens: torch.Tensor, weights: torch.Tensor, chosen: torch.Tensor, keep: torch.Tensor | None,
                     experts: Experts, num_experts: int, ctx: ParallelContext) -> torch.Tensor:
    """tokens [T, h], router weights and chosen experts [T, k], keep [T, k] (None: dropless) -> [T, h]."""
    t, k = chosen.shape
    flat_e = chosen.reshape(-1)
    flat_t = torch.arange(t, device=tokens.device).repeat_interleave(k)
    flat_w = weights.reshape(-1)
    if keep is not None:
        kept = keep.reshape(-1).nonzero().squeeze(1)
        flat_e, flat_t, flat_w = flat_e[kept], flat_t[kept], flat_w[kept]
    order = torch.argsort(flat_e, stable=True)
    token_of, weight_of = flat_t[order], flat_w[order]
    rows = tokens.index_select(0, token_of)
    counts = torch.bincount(flat_e, minlength=num_experts)
    if ctx.ep > 1:
        out = _compute_remote(rows, counts, experts, ctx)
    else:
        out = experts(rows, counts.tolist())
    out = out * weight_of.unsqueeze(1).to(out.dtype)
    return torch.zeros_like(tokens).index_add(0, token_of, out)
