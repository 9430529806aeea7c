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
    from megazoo.zoo.decoder import load_decoder as load

    return load(check_checkpoint(checkpoint), ctx, "generation")


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
