"""Pipeline schedules: the contract between the trainer and the pipeline runtime.

The trainer calls, once per optimizer step,

    loss_sum = forward_backward(chunks, micro_batches, ctx, loss_fn, forward_only=False,
                                hidden_size=h, dtype=compute_dtype)

- chunks: this rank's model chunks (GPTModel stages), one per virtual stage (vpp), in order.
- micro_batches: list of dicts with "input_ids" [b, s] and "labels" [b, s] (-100 = ignored);
  every rank of a pipeline receives the same list (only the first stage reads input_ids and only
  the last reads labels).
- loss_fn(per_token_loss [b, s], micro_batch) -> scalar tensor to backpropagate (already
  normalised by the global token count and scaled by the loss scale).
- returns the detached sum of loss_fn's values on the last stage (zero tensor elsewhere).

After it, `finalize_grads(chunks, ctx)` sums the gradients of tied embedding copies across the
first and last stage (the trainer then reduces over data parallelism).
"""

from __future__ import annotations

import torch

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.pipeline.no_pipelining import forward_backward_no_pipelining


def forward_backward(chunks, micro_batches, ctx: ParallelContext, loss_fn, forward_only: bool = False,
                     hidden_size: int | None = None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    if ctx.pp == 1:
        return forward_backward_no_pipelining(chunks, micro_batches, ctx, loss_fn, forward_only)
    raise NotImplementedError("pipeline schedules for pp > 1 are not implemented yet")


def finalize_grads(chunks, ctx: ParallelContext) -> None:
    """Sum tied-embedding gradients across the embedding group (no-op without pipelining)."""
    if ctx.pp == 1:
        return
    raise NotImplementedError("tied embeddings across pipeline stages are not implemented yet")
