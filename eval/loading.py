"""Load a megazoo checkpoint as a LanguageModel for scoring (one process, the whole model)."""

from __future__ import annotations

import torch

from megazoo.eval.lm import MegazooLM


def load_lm(checkpoint, max_length: int | None = None, ctx=None, dtype: torch.dtype | None = None) -> MegazooLM:
    from transformers import AutoTokenizer

    from megazoo.core.plan.traits import DECODER, kind_of
    from megazoo.zoo.hf import build_model, config_from_dict, load_full_state
    from megazoo.zoo.io import load_model, tokenizer_dir

    arch, cfg_dict, state = load_model(checkpoint)
    if kind_of(arch) != DECODER:
        raise ValueError(f"{checkpoint}: LM scoring needs a decoder (gpt or llama), this checkpoint is {arch!r}")
    cfg = config_from_dict(arch, cfg_dict)
    model = build_model(arch, cfg, ctx, dtype=dtype)
    load_full_state(model, state, model.ctx)
    tok_dir = tokenizer_dir(checkpoint)
    if tok_dir is None:
        raise ValueError(f"{checkpoint} has no tokenizer/ folder; import or train it with a tokenizer to score text")
    return MegazooLM(model.eval(), AutoTokenizer.from_pretrained(str(tok_dir)), max_length=max_length,
                     source=str(checkpoint))
