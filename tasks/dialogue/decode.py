"""Greedy decoding that stops at the first newline (MSDP's top_k=1 decoding; also the fine-tuned
models' responses and the chat): batches of prompts left-padded, sorted by length so that a batch
pads little, the context cut from the left to fit the model, the text before the first newline kept."""

from __future__ import annotations


def load_decoder(checkpoint):
    """(model, tokenizer) of a megazoo checkpoint, a run folder (its checkpoints/) or a Hugging Face
    folder (config.json or one .gguf), in this process."""
    from pathlib import Path

    from megazoo.zoo.decoder import load_decoder as load

    path = Path(checkpoint)
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such folder (give a decoder checkpoint: an import-hf folder, a "
                                f"training run or its checkpoints/, or a Hugging Face folder)")
    if (path / "checkpoints").is_dir() and not (path / "model.yaml").is_file():
        path = path / "checkpoints"  # a run folder: its latest checkpoint
    return load(path, None, "dialogue generation")


def greedy_lines(model, tokenizer, prompts: list[str], max_new_tokens: int = 48, batch: int = 8,
                 progress=None) -> list[str]:
    """The greedy continuation of each prompt up to its first newline (stripped), in prompt order."""
    from megazoo.zoo.generate import generate

    limit = model.cfg.seq_length - max_new_tokens
    ids = [tokenizer.encode(p, add_special_tokens=False)[-limit:] for p in prompts]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    out: list[str] = [""] * len(ids)
    for start in range(0, len(order), batch):
        rows = order[start:start + batch]
        new = generate(model, [ids[i] for i in rows], max_new_tokens, eos_token_id=eos, pad_token_id=pad,
                       stop_strings=["\n"], tokenizer=tokenizer)
        for i, tokens in zip(rows, new):
            out[i] = tokenizer.decode(tokens, skip_special_tokens=True).split("\n")[0].strip()
        if progress is not None:
            progress(min(start + batch, len(order)), len(order))
    return out
