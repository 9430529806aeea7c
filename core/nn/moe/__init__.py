"""Mixture-of-experts MLPs (`model.moe`): a top-k router, expert MLPs computed with grouped GEMMs,
token dispatch and combine (dropless or with a capacity factor), and expert parallelism
(`parallel.ep`: the experts split over ep data-parallel ranks, tokens exchanged by all-to-all).

One idea per file: router.py (gating and the auxiliary losses), aux.py (how those losses reach the
gradient), experts.py (the expert MLPs), capacity.py (token dropping), alltoall.py (the autograd
all-to-all), dispatch.py (permute, exchange, compute, combine), layer.py (the MoE MLP), metrics.py
(what the training log shows).
"""

from megazoo.core.nn.moe.layer import MoELayer
from megazoo.core.nn.moe.metrics import moe_metrics, set_aux_grad_scale

__all__ = ["MoELayer", "moe_metrics", "set_aux_grad_scale"]
