"""Greedy decoding that stops at the first newline (MSDP's top_k=1 decoding; also the fine-tuned
models' responses and the chat): batches of prompts left-padded, sorted by length so that a batch
pads little, the context cut from the left to fit the model, the text before the first newline kept.
The model and tokenizer come from eval/taskkit.load_decoder."""

from __future__ import annotations


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
