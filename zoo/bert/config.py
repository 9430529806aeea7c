"""BERT configuration: Megatron's pre-LN BERT and the original post-LN layout (Hugging Face BERT)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from megazoo.core.nn.config import TransformerConfig
from megazoo.core.parallel.embedding import padded_vocab_size


@dataclass
class BertConfig(TransformerConfig):
    vocab_size: int = 256
    seq_length: int = 64  # learned positions (max_position_embeddings)
    num_tokentypes: int = 2  # 0: no token-type (segment) embedding
    make_vocab_size_divisible_by: int = 128
    add_lm_head: bool = True  # masked-LM head (dense + act + norm, output tied to the word embeddings)
    add_pooler: bool = True  # tanh dense on the first token
    add_binary_head: bool = False  # next-sentence / sentence-order logits on the pooled output
    activation: str = "gelu_exact"  # BERT's "gelu" is the exact erf form
    causal: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.causal:
            raise ValueError("BERT is bidirectional: causal must be false")
        if self.position != "learned":
            raise ValueError(f"BERT uses learned absolute positions, got position={self.position!r}")
        if self.add_binary_head and not self.add_pooler:
            raise ValueError("add_binary_head needs add_pooler (the binary head reads the pooled output)")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "BertConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown BERT config keys {unknown}; valid keys: {sorted(known)}")
        return cls(**d)

    def padded_vocab(self, tp: int = 1) -> int:
        return padded_vocab_size(self.vocab_size, tp, self.make_vocab_size_divisible_by)


def megatron_bert(**kw) -> BertConfig:
    """Megatron-LM's BERT: pre-LN layers with a final LayerNorm, no embedding LayerNorm."""
    return BertConfig(**{**dict(post_norm=False, norm_eps=1e-5), **kw})


def original_bert(**kw) -> BertConfig:
    """The original BERT (and Hugging Face's): post-LN layers, LayerNorm on the embeddings."""
    return BertConfig(**{**dict(post_norm=True, norm_eps=1e-12), **kw})


TINY = {
    "bert-tiny": lambda **kw: megatron_bert(**{**dict(num_layers=2, hidden_size=64, num_heads=4, vocab_size=300,
                                                      seq_length=32, add_binary_head=True), **kw}),
    "bert-tiny-postln": lambda **kw: original_bert(**{**dict(num_layers=2, hidden_size=64, num_heads=4, vocab_size=300,
                                                             seq_length=32, add_binary_head=True), **kw}),
}
