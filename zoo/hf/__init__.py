"""Hugging Face import and export: pure state-dict maps per architecture, any TP/PP layout.

    arch, cfg, state = convert_from_hf(src)            # src: HF folder (or GGUF) or a transformers model
    model = import_hf(src, ctx)                         # this rank's slice/stage, ready to run
    export_hf(out_dir, arch, cfg, state, tokenizer=...) # a folder transformers.from_pretrained loads
    export_model(model, out_dir, arch, ctx)             # gathers TP/PP shards first (collective)

Bottleneck adapters (model.adapter_size > 0) have no place in any HF architecture, and a Houlsby
adapter (with its GELU) cannot be merged into a linear weight: the HF folder holds the base model
and the adapter weights are listed beside it in `adapters.safetensors` (full megazoo names, e.g.
`layers.0.adapter1.down.weight`; its metadata gives arch and adapter_size).
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from megazoo.core.parallel.context import ParallelContext
from megazoo.zoo.hf import bert, gpt2, llama, megatron_bert, mixtral, t5
from megazoo.zoo.hf.common import HFExportError, HFImportError, HFSource, apply_rules, add_prefix, invert_rules, read_hf
from megazoo.zoo.hf.heads import pad_heads as _pad_heads
from megazoo.zoo.hf.heads import unpad_heads
from megazoo.zoo.hf.models import LayoutError, build_model, check_layout, config_from_dict
from megazoo.zoo.hf.shard import expected_shapes, gather_full_state, load_full_state, stage_layers
from megazoo.zoo.hf.writer import atomic_folder, copy_tokenizer, write_weights
from megazoo.zoo.registry import builder_class, registered

ADAPTERS = {m.MODEL_TYPE: m for m in (bert, gpt2, llama, megatron_bert, mixtral, t5)}
SUPPORTED_MODEL_TYPES = sorted(ADAPTERS)
ADAPTER_FILE = "adapters.safetensors"  # the bottleneck adapters of an export, beside the HF weights
_ADAPTER_KEY = re.compile(r"(^|\.)adapter[12]\.")


def split_adapters(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(base model tensors, bottleneck adapter tensors) of a full megazoo state dict."""
    adapters = {k: v for k, v in state.items() if _ADAPTER_KEY.search(k)}
    return {k: v for k, v in state.items() if k not in adapters}, adapters


def adapter_for(arch: str, cfg):
    """The HF adapter that exports a megazoo (arch, config): of the model types its builder converts
    (zoo/registry.py), the one whose adapter `exports(cfg)` (GPT-2, Llama or Mixtral for a decoder,
    by its positions and experts; BERT or Megatron-BERT by its norm placement)."""
    names = registered()
    if arch in names:
        found = [ADAPTERS[t] for t in builder_class(arch).hf_model_types if ADAPTERS[t].exports(cfg)]
        if found:
            return found[0]
    exportable = [a for a in names if builder_class(a).hf_model_types]
    raise HFExportError(f"architecture {arch!r} has no Hugging Face export; exportable: {', '.join(exportable)}")


def convert_from_hf(src, gguf_file: str | None = None, source: HFSource | None = None):
    """(arch, megazoo config, full megazoo state dict) from an HF folder, GGUF folder or model."""
    source = source or read_hf(src, SUPPORTED_MODEL_TYPES, gguf_file)
    ad = ADAPTERS[source.config.model_type]
    state = add_prefix(source.state, ad.PREFIX, getattr(ad, "HEADS", ("lm_head.",))) if ad.PREFIX else source.state
    if hasattr(ad, "import_state"):  # a layout whose tensors are not one-to-one (Mixtral's fused experts)
        state = ad.import_state(state)
    cfg = ad.config_from_hf(source.config, state.keys())
    meta = build_model(ad.ARCH, cfg, device="meta")
    return ad.ARCH, cfg, apply_rules(ad.rules(cfg), state, expected_shapes(meta), ad.ignore(cfg))


def convert_to_hf(arch: str, cfg, state: dict[str, torch.Tensor]):
    """(transformers config, HF state dict) of the base model of a full megazoo state dict (its
    bottleneck adapters, which HF layouts have no place for, are left out: see split_adapters)."""
    ad = adapter_for(arch, cfg)
    hf_config = ad.config_to_hf(cfg)
    hf_state = invert_rules(ad.rules(cfg), split_adapters(state)[0])
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
    max_shard_size) and the tokenizer files (a folder or a tokenizer object); bottleneck adapters,
    if the model has any, go to ADAPTER_FILE beside them."""
    hf_config, hf_state = convert_to_hf(arch, cfg, state)
    adapters = split_adapters(state)[1]
    if dtype is not None:
        hf_state = {k: v.to(dtype) for k, v in hf_state.items()}
        adapters = {k: v.to(dtype) for k, v in adapters.items()}
        hf_config.dtype = str(dtype).replace("torch.", "")
    out = Path(out_dir)
    with atomic_folder(out, overwrite) as tmp:
        hf_config.save_pretrained(str(tmp))
        write_weights(tmp, hf_state, max_shard_size)
        if adapters:
            from safetensors.torch import save_file

            save_file({k: v.detach().cpu().contiguous() for k, v in adapters.items()}, str(tmp / ADAPTER_FILE),
                      metadata={"format": "pt", "arch": arch, "adapter_size": str(getattr(cfg, "adapter_size", 0))})
        copy_tokenizer(tokenizer, tmp)
    return out


def export_model(model, out_dir, arch: str, ctx: ParallelContext | None = None, **kw) -> Path | None:
    """Gather a model from any TP/PP layout (collective) and write it from global rank 0."""
    ctx = ctx or getattr(model, "ctx", None) or ParallelContext.single()
    state = gather_full_state(model, ctx)
    if ctx.rank == 0:
        return export_hf(out_dir, arch, model.cfg, state, **kw)
    return None


__all__ = ["ADAPTER_FILE", "ADAPTERS", "HFExportError", "HFImportError", "LayoutError", "SUPPORTED_MODEL_TYPES",
           "build_model", "check_layout", "config_from_dict", "convert_from_hf", "convert_to_hf", "export_hf",
           "export_model", "gather_full_state", "import_hf", "load_full_state", "pad_heads", "read_hf",
           "split_adapters", "stage_layers", "unpad_heads"]

pad_heads = _pad_heads
