"""`megazoo export-hf CHECKPOINT OUT_DIR`: a megazoo model checkpoint -> a Hugging Face folder
(config.json, safetensors weights sharded with an index past --max-shard-size, tokenizer files)
that `transformers.AutoModel*.from_pretrained(OUT_DIR)` loads as it is. A model with bottleneck
adapters exports its base model there and lists the adapter weights in OUT_DIR/adapters.safetensors
(HF architectures have no adapters, and a Houlsby adapter cannot be merged into a linear weight).

The folder is written beside OUT_DIR and moved into place only when complete; an existing OUT_DIR
is replaced only with --overwrite. A failure while writing (a full disk: exit 1) names OUT_DIR."""

from __future__ import annotations

import argparse
from pathlib import Path

from megazoo.core.fs import input_arg, output_arg

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def shard_size(text: str) -> int:
    """--max-shard-size: 2GB, 500MB, 50KB or bytes, from 1KB to 10TB (zoo/hf/writer.py; imported
    when the value is read, so `megazoo export-hf --help` does not load torch)."""
    from megazoo.zoo.hf.writer import shard_size as parse

    return parse(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "checkpoint", kind="folder",
              help="an import-hf folder (model.yaml + model.safetensors) or a training checkpoint (a run's "
                   "checkpoints/ folder or one iter_N in it)")
    output_arg(parser, "out_dir", kind="folder", help="the Hugging Face folder to create")
    parser.add_argument("--max-shard-size", type=shard_size, default="2GB",
                        help="split the weights into shards of at most this size, 1KB to 10TB (default 2GB)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default=None, help="cast the weights (default: as stored)")


def run(args) -> int:
    import torch

    from megazoo.zoo.hf import ADAPTER_FILE, config_from_dict, export_hf, split_adapters, unpad_heads
    from megazoo.zoo.hf.writer import output_errors
    from megazoo.zoo.io import load_model, read_meta, tokenizer_dir

    # the output policy checked CHECKPOINT against OUT_DIR before this ran (core/fs/policy.py); errors are
    # ValueErrors (CheckpointError, HFExportError: exit 2) or OSErrors, one line at the boundary
    arch, cfg_dict, state = load_model(args.checkpoint)
    cfg = config_from_dict(arch, cfg_dict)
    # imported with --pad-heads (recorded in an import-hf folder's model.yaml; training checkpoints have none)
    padded = read_meta(args.checkpoint).get("heads_padded_from") if (Path(args.checkpoint) / "model.yaml").exists() \
        else None
    if padded:  # imported with --pad-heads: give the HF model its own head count back
        cfg, state = unpad_heads(arch, cfg, state, padded["num_kv_heads"])
    dtype = getattr(torch, DTYPES[args.dtype]) if args.dtype else None
    tokenizer = tokenizer_dir(args.checkpoint)
    with output_errors(args.out_dir, "the Hugging Face folder"):  # a full disk names OUT_DIR, not the input
        export_hf(args.out_dir, arch, cfg, state, tokenizer=tokenizer, max_shard_size=args.max_shard_size,
                  overwrite=args.overwrite, dtype=dtype)
    base, adapters = split_adapters(state)
    print(f"exported megazoo {arch} ({len(base)} tensors) -> {args.out_dir}")
    if adapters:
        print(f"adapters: {len(adapters)} bottleneck adapter tensors (adapter_size={cfg.adapter_size}) listed in "
              f"{Path(args.out_dir) / ADAPTER_FILE}; the Hugging Face model in {args.out_dir} is the base model "
              f"without them (HF architectures have no adapters)")
    return 0
