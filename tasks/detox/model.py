"""The decoder that generates: a megazoo checkpoint (an `import-hf` folder, a training checkpoint)
or a Hugging Face folder (config.json and weights, or one .gguf such as SmolLM2's), converted to
megazoo's model so that it runs at any tp x pp layout (this rank's share of it when `ctx` is a
multi-rank layout), with its tokenizer."""

from __future__ import annotations

from pathlib import Path

from megazoo.eval.lm import END_TOKENS


def check_checkpoint(checkpoint) -> Path:
    path = Path(checkpoint)
    if not path.is_dir():
        raise FileNotFoundError(f"--checkpoint {path}: no such folder (give a Hugging Face folder or a megazoo "
                                f"checkpoint of a GPT/Llama decoder)")
    return path


def load_decoder(checkpoint, ctx=None):
    """(model or this rank's chunks, tokenizer) of `checkpoint` at the layout of `ctx` (None: one process)."""
    from transformers import AutoTokenizer

    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.pipeline import build_chunks
    from megazoo.zoo.hf import build_model, config_from_dict, load_full_state
    from megazoo.zoo.io import is_hf_folder, load_model, tokenizer_dir

    path = check_checkpoint(checkpoint)
    ctx = ctx or ParallelContext.single()
    arch, cfg_dict, state = load_model(path, hf=True)
    if arch not in ("gpt", "llama"):
        raise ValueError(f"{path}: generation needs a decoder (gpt or llama), this checkpoint is {arch!r}")
    cfg = config_from_dict(arch, cfg_dict)
    if ctx.pp == 1:
        model = load_full_state(build_model(arch, cfg, ctx), state, ctx).eval()
    else:
        chunks = build_chunks(lambda **kw: build_model(arch, cfg, ctx, **kw), cfg.num_layers, ctx)
        model = [load_full_state(c, state, ctx).eval() for c in chunks]
    kw = {}
    if is_hf_folder(path):
        tok_path = path
        ggufs = sorted(p.name for p in path.glob("*.gguf"))
        if not (path / "config.json").is_file() and len(ggufs) == 1:
            kw["gguf_file"] = ggufs[0]
    else:
        tok_path = tokenizer_dir(path)
        if tok_path is None:
            raise ValueError(f"{path} has no tokenizer; import or train it with a tokenizer to generate text")
    return model, AutoTokenizer.from_pretrained(str(tok_path), **kw)


def start_token(tok) -> int:
    """The token unconditional generation starts from: the end-of-document token, as Megatron's
    unconditional samples start from GPT-2's <|endoftext|>; else the tokenizer's bos or eos."""
    unk = getattr(tok, "unk_token_id", None)
    for name in END_TOKENS:
        found = tok.convert_tokens_to_ids(name)
        if isinstance(found, int) and found != unk:
            return found
    for found in (tok.bos_token_id, tok.eos_token_id):
        if found is not None:
            return int(found)
    raise ValueError("the tokenizer has no end-of-document, bos or eos token to start unconditional samples from")
