"""A decoder (GPT or Llama) and its tokenizer at a layout, from any folder a user may name: a
megazoo checkpoint (an `import-hf` folder, a `save_model` folder, a training checkpoint) or a
Hugging Face folder (config.json and weights, or one .gguf such as SmolLM2's), converted to
megazoo's model so that it runs at any tp x pp layout. With pp > 1 the model is this rank's chunks
(a list, as zoo.generate takes them)."""

from __future__ import annotations

from pathlib import Path


def load_decoder(checkpoint, ctx=None, use: str = "generation"):
    """(model or this rank's chunks, tokenizer) of `checkpoint` at the layout of `ctx` (None: one
    process). `use` names what the caller does, for the error messages."""
    from transformers import AutoTokenizer

    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.pipeline import build_chunks
    from megazoo.core.plan.traits import DECODER, kind_of
    from megazoo.zoo.hf import build_model, config_from_dict, load_full_state
    from megazoo.zoo.hf.gguf import hf_folder
    from megazoo.zoo.io import is_hf_folder, load_model, tokenizer_dir

    path = Path(checkpoint)
    ctx = ctx or ParallelContext.single()
    arch, cfg_dict, state = load_model(path, hf=True)
    if kind_of(arch) != DECODER:
        raise ValueError(f"{path}: {use} needs a decoder (gpt or llama), this checkpoint is {arch!r}")
    cfg = config_from_dict(arch, cfg_dict)
    if ctx.pp == 1:
        model = load_full_state(build_model(arch, cfg, ctx), state, ctx).eval()
    else:
        chunks = build_chunks(lambda **kw: build_model(arch, cfg, ctx, **kw), cfg.num_layers, ctx)
        model = [load_full_state(c, state, ctx).eval() for c in chunks]
    if is_hf_folder(path):
        tok_path = hf_folder(path)  # a GGUF's tokenizer: from its dequantised folder in megazoo's cache
    else:
        tok_path = tokenizer_dir(path)
        if tok_path is None:
            raise ValueError(f"{path} has no tokenizer/ folder; import or train it with a tokenizer for {use}")
    return model, AutoTokenizer.from_pretrained(str(tok_path))
