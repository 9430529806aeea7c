"""T5 configuration: encoder-decoder, relative position buckets, RMS-style norm, no biases."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from megazoo.core.nn.config import TransformerConfig
from megazoo.core.parallel.embedding import padded_vocab_size


@dataclass
class T5Config(TransformerConfig):
    """num_layers counts encoder layers; num_decoder_layers the decoder's (None: the same)."""

    vocab_size: int = 256
    num_decoder_layers: int | None = None
    relative_attention_num_buckets: int = 32
    relative_attention_max_distance: int = 128
    tie_embeddings: bool = True  # the output layer is the embedding table
    scale_output: bool = True  # multiply the decoder output by h^-0.5 before the head (T5 v1.0; not v1.1)
    make_vocab_size_divisible_by: int = 128
    decoder_start_token_id: int = 0
    pad_token_id: int = 0
    eos_token_id: int = 1
    seq_length: int = 512  # a default length for data pipelines; relative positions have no limit
    masking: str = "t5"  # pretraining spans (core/data/t5.py): t5 (the T5 paper's) | megatron (whole-word, geometric)
    # T5's layer settings, as defaults of the shared transformer config
    norm: str = "rmsnorm"
    norm_eps: float = 1e-6
    bias: bool = False
    activation: str = "relu"  # relu (v1.0) | geglu (v1.1 "gated-gelu")
    position: str = "relative"
    attention_scale: float | None = 1.0  # T5 folds 1/sqrt(d) into its initialisation
    causal: bool = False  # the encoder; the decoder's layers are causal

    def __post_init__(self):
        super().__post_init__()
        if self.num_decoder_layers is None:
            self.num_decoder_layers = self.num_layers
        if self.position != "relative":
            raise ValueError(f"T5 uses relative position buckets, got position={self.position!r}")
        if self.masking not in ("t5", "megatron"):
            raise ValueError(f"masking must be t5 (the T5 paper's spans) or megatron, got {self.masking!r}")
        if self.adapter_size:  # its decoder layers (self + cross attention) have no adapter slots
            raise ValueError(f"T5 does not take bottleneck adapters (adapter_size={self.adapter_size}); adapters are "
                             "available for gpt, llama and bert: set adapter_size=0")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "T5Config":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown T5 config keys {unknown}; valid keys: {sorted(known)}")
        return cls(**d)

    def padded_vocab(self, tp: int = 1) -> int:
        return padded_vocab_size(self.vocab_size, tp, self.make_vocab_size_divisible_by)


TINY = {
    "t5-tiny": lambda **kw: T5Config(**{**dict(num_layers=2, num_decoder_layers=2, hidden_size=64, num_heads=4,
                                               kv_channels=16, ffn_hidden_size=128, vocab_size=300,
                                               relative_attention_num_buckets=8,
                                               relative_attention_max_distance=20), **kw}),
}
