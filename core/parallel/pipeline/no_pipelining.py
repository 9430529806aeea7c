"""No pipelining: run every micro-batch forward and backward in turn (gradient accumulation)."""

from __future__ import annotations

import torch

from megazoo.core.parallel.context import ParallelContext

# model inputs besides input_ids and labels, passed when a micro-batch has them (BERT's segments, T5's decoder)
EXTRA_INPUTS = ("position_ids", "attention_mask", "token_type_ids", "decoder_input_ids", "decoder_attention_mask")


def forward_backward_no_pipelining(chunks, micro_batches, ctx: ParallelContext, loss_fn,
                                   forward_only: bool = False) -> torch.Tensor:
    (model,) = chunks
    total = torch.zeros((), dtype=torch.float32)
    for mb in micro_batches:
        with torch.set_grad_enabled(not forward_only):
            extra = {k: mb[k] for k in EXTRA_INPUTS if k in mb}
            per_token = model(input_ids=mb["input_ids"], labels=mb["labels"], **extra)
            loss = loss_fn(per_token, mb)
        if not forward_only:
            loss.backward()
        total += loss.detach().float().cpu()
    return total
