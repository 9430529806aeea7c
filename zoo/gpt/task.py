"""The model of a decoder task (supervised fine-tuning, continued pretraining, the story
generator): the GPT/Llama builder of a recipe's model section, refused in one line naming the task
when the section is another kind of model."""

from __future__ import annotations

from megazoo.core.plan.traits import DECODER, architectures, kind_of
from megazoo.core.train.errors import ConfigError


def decoder_arch(model: dict, refusal: str) -> str:
    """model.arch (default gpt), checked to be a decoder; `refusal` starts the error
    ("task detox trains decoders")."""
    arch = model.get("arch", "gpt")
    if kind_of(arch) != DECODER:
        raise ConfigError(f"{refusal}: model.arch={arch!r} is not one of {', '.join(architectures(DECODER))}")
    return arch


def decoder_model(model: dict, recompute: str, refusal: str):
    """The builder of the decoder `model` (decoder_arch checks it first)."""
    from megazoo.zoo.gpt.builder import build

    decoder_arch(model, refusal)
    return build(model, recompute)
