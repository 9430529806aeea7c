"""What kind of model an architecture is, as plain values: the facts code branches on instead of
comparing architecture names (`shape.traits.encoder_decoder`, not a test of the name).

The table is keyed by the names the zoo registers its builders under (entry-point group
"megazoo.models", pyproject.toml), and it lives here, in plain values, because `megazoo plan`
reads it without torch and core imports no zoo. A zoo builder answers `builder.traits` from it, and
tests/test_traits.py checks that every registered builder has an entry and that the entry agrees
with what the builder builds. A new architecture adds its row here and its builder in zoo/<arch>/.
"""

from __future__ import annotations

from dataclasses import dataclass

DECODER, ENCODER, ENCODER_DECODER = "decoder", "encoder", "encoder-decoder"
KINDS = (DECODER, ENCODER, ENCODER_DECODER)


class UnknownArchitecture(ValueError):
    """A model.arch no builder is registered under."""


@dataclass(frozen=True)
class ArchTraits:
    """One architecture's kind and capabilities (defaults: what most of them do not have)."""

    kind: str  # decoder (causal LM) | encoder (bidirectional) | encoder-decoder (cross-attention)
    title: str  # how messages name it ("T5 does not support ...")
    position: str = "learned"  # its layout's default position encoding: learned | rope | relative
    dropout: bool = True  # its published models train with dropout (a model card's default)
    token_types: bool = False  # token-type (segment) embeddings beside the word embedding
    embedding_norm: bool = False  # a norm after the embeddings, unless a model says otherwise
    mlm_heads: bool = False  # a pooler, a masked-LM transform (dense + norm + own bias) and a binary head
    position_table_first: bool = False  # its learned position table comes before the word embedding in the
    # planner's gradient buckets (the GPT module's registration order, core/plan/memory.py)
    pipeline_parallel: bool = True  # its layers split into pipeline stages
    context_parallel: bool = False  # its layers take a sequence split over parallel.cp (ring attention)
    moe: bool = False  # its MLPs can be mixtures of experts
    head_padding: bool = False  # zoo/hf/heads.py can pad its key/value groups to a multiple of tp
    generates: bool = False  # zoo/generate.py samples text from it

    @property
    def causal(self) -> bool:
        """Every token sees only earlier ones (a decoder-only language model)."""
        return self.kind == DECODER

    @property
    def encoder_decoder(self) -> bool:
        """An encoder stack and a decoder stack with cross-attention (each ends with its own norm
        and has its own relative-position table)."""
        return self.kind == ENCODER_DECODER

    @property
    def cross_attention(self) -> bool:
        return self.encoder_decoder


_GPT = dict(kind=DECODER, title="GPT", position_table_first=True, context_parallel=True, moe=True,
            head_padding=True, generates=True)

TRAITS: dict[str, ArchTraits] = {
    "gpt": ArchTraits(**_GPT),
    "llama": ArchTraits(**{**_GPT, "title": "Llama", "position": "rope", "dropout": False}),
    "bert": ArchTraits(kind=ENCODER, title="BERT", token_types=True, embedding_norm=True, mlm_heads=True,
                       head_padding=True),
    "t5": ArchTraits(kind=ENCODER_DECODER, title="T5", position="relative", pipeline_parallel=False, generates=True),
}


def arch_traits(arch: str) -> ArchTraits:
    """The traits of a registered architecture; UnknownArchitecture names the known ones."""
    try:
        return TRAITS[arch]
    except (KeyError, TypeError):
        raise UnknownArchitecture(f"model arch {arch!r} is not one of {', '.join(TRAITS)}") from None


def kind_of(arch) -> str | None:
    """The kind of `arch` (decoder, encoder, encoder-decoder); None for a name no builder registers."""
    traits = TRAITS.get(arch) if isinstance(arch, str) else None
    return traits.kind if traits else None


def architectures(kind: str | None = None) -> tuple[str, ...]:
    """The architecture names (of one kind), in table order: for messages that list them."""
    return tuple(name for name, t in TRAITS.items() if kind is None or t.kind == kind)
