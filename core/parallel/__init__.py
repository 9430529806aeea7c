"""Parallel building blocks: context and groups, autograd collectives, TP/SP layers, the
vocab-parallel loss, RNG streams, layout-independent init, pipeline schedules."""

from megazoo.core.parallel.context import ParallelConfig, ParallelConfigError, ParallelContext, init_distributed

__all__ = ["ParallelConfig", "ParallelConfigError", "ParallelContext", "init_distributed"]
