"""Pipeline schedules: the contract between the trainer and the pipeline runtime.

The trainer calls, once per optimizer step,

    loss_sum = forward_backward(chunks, micro_batches, ctx, loss_fn, forward_only=False,
                                hidden_size=h, dtype=compute_dtype)

- chunks: this rank's model chunks (GPTModel stages), one per virtual stage (vpp), in order;
  build them with build_chunks(make_chunk, num_layers, ctx) (split rules in stages.py).
- micro_batches: list of dicts with "input_ids" [b, s] and "labels" [b, s] (-100 = ignored), and
  optionally "position_ids" / "attention_mask"; every rank of a pipeline receives the same list
  (only the first stage reads input_ids and only the last reads labels; every stage reads the
  shape of input_ids to size the activations it receives).
- loss_fn(per_token_loss [b, s], micro_batch) -> scalar tensor to backpropagate (already
  normalised by the global token count and scaled by the loss scale).
- hidden_size, dtype: the activations passed between stages are [s (/ tp under sp), b, h] in
  `dtype` (send in the compute dtype).
- returns the detached sum of loss_fn's values on the last stage (zero tensor elsewhere).
- keyword extras: schedule ("auto": 1F1B, interleaved when vpp > 1; or "1f1b" | "interleaved" |
  "gpipe"), stats (a dict filled with measured in-flight micro-batches, saved bytes, busy and wall
  time by meter.PipelineMeter, the runner's observer), overlap_p2p (default True: a batch's sends
  finish during the next forward or backward instead of before it; False waits for them at once,
  as the benchmark compares).

After it, `finalize_grads(chunks, ctx)` sums the gradients of tied embedding copies across the
first and last stage (in training, the optimizer's finish_grad_sync calls it between the
data-parallel reductions), and
`broadcast_from_last_stage(tensor, ctx)` / `share_metrics(dict, ctx)` give every rank the last
stage's loss, grad norm and skip flags.
"""

from __future__ import annotations

import torch

from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.pipeline.grads import broadcast_from_last_stage, finalize_grads, share_metrics
from megazoo.core.parallel.pipeline.meter import PipelineMeter
from megazoo.core.parallel.pipeline.no_pipelining import forward_backward_no_pipelining
from megazoo.core.parallel.pipeline.p2p import PipelineCommError
from megazoo.core.parallel.pipeline.runner import run_schedule
from megazoo.core.parallel.pipeline.schedules import (ScheduleError, check_fits, format_table, rank_table,
                                                      schedule_table, simulate)
from megazoo.core.parallel.pipeline.stages import build_chunks, chunk_ranges, describe_split, split_layers

__all__ = ["forward_backward", "finalize_grads", "broadcast_from_last_stage", "share_metrics", "build_chunks",
           "chunk_ranges", "split_layers", "describe_split", "schedule_table", "rank_table", "format_table",
           "simulate", "check_fits", "ScheduleError", "PipelineCommError"]


def forward_backward(chunks, micro_batches, ctx: ParallelContext, loss_fn, forward_only: bool = False,
                     hidden_size: int | None = None, dtype: torch.dtype = torch.float32,
                     schedule: str = "auto", stats: dict | None = None, overlap_p2p: bool = True) -> torch.Tensor:
    if ctx.pp == 1:
        return forward_backward_no_pipelining(chunks, micro_batches, ctx, loss_fn, forward_only)
    observer = PipelineMeter(chunks, stats) if stats is not None else None
    return run_schedule(chunks, micro_batches, ctx, loss_fn, forward_only, hidden_size, dtype, schedule, observer,
                        overlap_p2p)
