"""The analytical planner: memory, FLOPs and step time of a model on a cluster layout.

core knows no model: the inputs are a `ModelShape` and a `Layout` (plain dataclasses) and a GPU
name from the table in `hardware`. `plan` evaluates one layout, `search` ranks the feasible ones.
"""

from megazoo.core.plan.flops import flops_per_token, model_flops, narayanan_flops
from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY, GPUS, get_gpu
from megazoo.core.plan.params import (active_params, check_layout, padded_vocab, stage_params, stage_shapes,
                                      total_params)
from megazoo.core.plan.planner import Plan, plan
from megazoo.core.plan.search import search
from megazoo.core.plan.shapes import GPU, Efficiency, Layout, ModelShape, PlanError
from megazoo.core.plan.traits import ArchTraits, arch_traits
from megazoo.core.plan.zero import SHARD_MODES, zero_bytes_per_param, zero_traffic_per_param

__all__ = [
    "DEFAULT_EFFICIENCY", "GPU", "GPUS", "active_params", "ArchTraits", "arch_traits", "Efficiency", "Layout",
    "ModelShape", "Plan", "PlanError", "check_layout", "flops_per_token", "get_gpu", "model_flops", "narayanan_flops",
    "padded_vocab", "plan", "search", "SHARD_MODES", "stage_params", "stage_shapes", "total_params",
    "zero_bytes_per_param", "zero_traffic_per_param",
]
