"""Hugging Face import and export: pure state-dict maps per architecture, any TP/PP layout.

    arch, cfg, state = convert_from_hf(src)            # src: HF folder (or GGUF) or a transformers model
    model = import_hf(src, ctx)                         # this rank's slice/stage, ready to run
    export_hf(out_dir, arch, cfg, state, tokenizer=...) # a folder transformers.from_pretrained loads
    export_model(model, out_dir, arch, ctx)             # gathers TP/PP shards first (collective)
"""

from __future__ import annotations

from pathlib import Path

import torch

from megazoo.core.parallel.context import ParallelContext
from megazoo.zoo.hf import bert, gpt2, llama, megatron_bert, t5
from megazoo.zoo.hf.common import HFExportError, HFImportError, HFSource, apply_rules, add_prefix, invert_rules, read_hf
from megazoo.zoo.hf.heads import pad_heads as _pad_heads
from megazoo.zoo.hf.heads import unpad_heads
from megazoo.zoo.hf.models import ARCHS, LayoutError, build_model, check_layout, config_from_dict
from megazoo.zoo.hf.shard import expected_shapes, gather_full_state, load_full_state, stage_layers
from megazoo.zoo.hf.writer import atomic_folder, copy_tokenizer, write_weights

ADAPTERS = {m.MODEL_TYPE: m for m in (bert, gpt2, llama, megatron_bert, t5)}
SUPPORTED_MODEL_TYPES = sorted(ADAPTERS)


def adapter_for(arch: str, cfg):
    """The HF adapter that exports a megazoo (arch, config)."""
    if arch in ("gpt", "llama"):
        return llama if cfg.position == "rope" else gpt2
    if arch == "bert":  # the original post-LN BERT, or Megatron's pre-LN one
        return bert if cfg.post_norm else megatron_bert
    if arch == "t5":
        return t5
    raise HFExportError(f"architecture {arch!r} has no Hugging Face export; exportable: {', '.join(ARCHS)}")


def convert_from_hf(src, gguf_file: str | None = None, source: HFSource | None = None):
    """(arch, megazoo config, full megazoo state dict) from an HF folder, GGUF folder or model."""
    source = source or read_hf(src, SUPPORTED_MODEL_TYPES, gguf_file)
    ad = ADAPTERS[source.config.model_type]
    state = add_prefix(source.state, ad.PREFIX, getattr(ad, "HEADS", ("lm_head.",))) if ad.PREFIX else source.state
    cfg = ad.config_from_hf(source.config, state.keys())
    meta = build_model(ad.ARCH, cfg, device="meta")
    return ad.ARCH, cfg, apply_rules(ad.rules(cfg), state, expected_shapes(meta), ad.ignore(cfg))


def convert_to_hf(arch: str, cfg, state: dict[str, torch.Tensor]):
    """(transformers config, HF state dict) for a full megazoo state dict."""
    ad = adapter_for(arch, cfg)
    hf_config = ad.config_to_hf(cfg)
    hf_state = invert_rules(ad.rules(cfg), state)
    if hasattr(ad, "export_state"):
        hf_state = ad.export_state(cfg, hf_state)
    return hf_config, hf_state


def import_hf(src, ctx: ParallelContext | None = None, gguf_file: str | None = None, dtype=None,
              pad_heads: bool = False, **stage):
    """Build this rank's model (tp slice, pp stage) from an HF source, in eval mode.
    pad_heads: add zero KV groups when tp does not divide the heads (same outputs; see heads.py)."""
    ctx = ctx or ParallelContext.single()
    arch, cfg, state = convert_from_hf(src, gguf_file)
    if pad_heads:
        cfg, state = _pad_heads(arch, cfg, state, ctx.tp)
    model = build_model(arch, cfg, ctx, dtype=dtype, **stage)
    load_full_state(model, state, ctx)
    return model.eval()


def export_hf(out_dir, arch: str, cfg, state: dict[str, torch.Tensor], tokenizer=None, max_shard_size="2GB",
              overwrite: bool = False, dtype: torch.dtype | None = None) -> Path:
    """Write an HF folder: config.json, safetensors weights (sharded with an index past
    max_shard_size) and the tokenizer files (a folder or a tokenizer object)."""
    hf_config, hf_state = convert_to_hf(arch, cfg, state)
    if dtype is not None:
        hf_state = {k: v.to(dtype) for k, v in hf_state.items()}
        hf_config.dtype = str(dtype).replace("torch.", "")
    out = Path(out_dir)
    with atomic_folder(out, overwrite) as tmp:
        hf_config.save_pretrained(str(tmp))
        write_weights(tmp, hf_state, max_shard_size)
        copy_tokenizer(tokenizer, tmp)
    return out


def export_model(model, out_dir, arch: str, ctx: ParallelContext | None = None, **kw) -> Path | None:
    """Gather a model from any TP/PP layout (collective) and write it from global rank 0."""
    ctx = ctx or getattr(model, "ctx", None) or ParallelContext.single()
    state = gather_full_state(model, ctx)
    if ctx.rank == 0:
        return export_hf(out_dir, arch, model.cfg, state, **kw)
    return None


__all__ = ["ADAPTERS", "HFExportError", "HFImportError", "LayoutError", "SUPPORTED_MODEL_TYPES", "build_model",
           "check_layout", "config_from_dict", "convert_from_hf", "convert_to_hf", "export_hf", "export_model",
           "gather_full_state", "import_hf", "load_full_state", "pad_heads", "read_hf", "stage_layers", "unpad_heads"]

pad_heads = _pad_heads
