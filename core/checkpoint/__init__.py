"""Sharded, layout-independent, crash-safe checkpoints on torch.distributed.checkpoint.

Public API (see api.py, spec.py, full.py, storage.py):
  save_checkpoint, load_checkpoint, AsyncCheckpointer, architecture, CheckpointError
  ShardSpec, Sharded, PerRank, param_spec, flat_param_spec, model_state, named_parameters,
  checkpoint_name, rng_state, set_rng_state
  load_full_model_state, save_full_model_state
  find_latest, list_checkpoints, resolve_resume
"""

from megazoo.core.checkpoint.api import (AsyncCheckpointer, architecture, check_meta, layout_of, load_checkpoint,
                                         open_checkpoint, save_checkpoint)
from megazoo.core.checkpoint.full import load_full_model_state, save_full_model_state
from megazoo.core.checkpoint.planner import CheckpointError
from megazoo.core.checkpoint.spec import (PerRank, Sharded, ShardSpec, checkpoint_name, flat_param_spec, model_state,
                                          named_parameters, param_spec, rng_state, set_rng_state)
from megazoo.core.checkpoint.storage import find_latest, list_checkpoints, resolve_resume

__all__ = ["AsyncCheckpointer", "CheckpointError", "PerRank", "ShardSpec", "Sharded", "architecture", "check_meta",
           "checkpoint_name", "find_latest", "flat_param_spec", "layout_of", "list_checkpoints", "load_checkpoint",
           "load_full_model_state", "model_state", "named_parameters", "open_checkpoint", "param_spec",
           "resolve_resume", "rng_state", "save_checkpoint", "save_full_model_state", "set_rng_state"]
