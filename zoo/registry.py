"""The one model registry: an architecture's name gives its builder class, the object registered in
the entry-point group "megazoo.models" (pyproject.toml), which the trainer calls as
`build(model, recompute)` too. The builder class states what the rest of the zoo needs by name:

    config_class       the config dataclass (from_dict / to_dict)
    model_class        the module of one model chunk
    hf_model_types     the Hugging Face model types it converts to and from (zoo/hf ADAPTERS); on
                       export, the first whose adapter `exports(cfg)`

A Hugging Face model_type reaches a builder through its converter: zoo/hf's ADAPTERS[model_type]
names the architecture (ARCH). What kind of model an architecture is comes from its traits
(core/plan/traits.py), which builders answer as `builder.traits`.
"""

from __future__ import annotations


class UnknownModel(ValueError):
    """An architecture name no builder is registered under."""


def builder_class(arch: str) -> type:
    """The builder class registered under `arch`."""
    from megazoo.core.train.models import available_architectures  # the trainer's lookup (core/train/models.py)

    group = available_architectures()
    if arch not in group:
        raise UnknownModel(f"unknown megazoo architecture {arch!r}; known: {', '.join(group)}")
    return group[arch].load()


def registered() -> tuple[str, ...]:
    """Every registered architecture name, in registration order."""
    from megazoo.core.train.models import available_architectures

    return tuple(available_architectures())
