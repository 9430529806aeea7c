"""GPT configuration: the GPT-2 / Megatron-GPT layout and the Llama layout as settings of one model."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from megazoo.core.nn.config import TransformerConfig
from megazoo.core.parallel.embedding import padded_vocab_size
from megazoo.core.plan.flops import model_flops
from megazoo.core.plan.params import total_params
from megazoo.core.plan.shapes import ModelShape


@dataclass
class GPTConfig(TransformerConfig):
    vocab_size: int = 256
    seq_length: int = 64
    tie_embeddings: bool = True
    make_vocab_size_divisible_by: int = 128

    def __post_init__(self):
        super().__post_init__()
        if self.position not in ("learned", "rope", "none"):
            raise ValueError(f"GPT position must be learned, rope or none, got {self.position!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "GPTConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown GPT config keys {unknown}; valid keys: {sorted(known)}")
        return cls(**d)

    def padded_vocab(self, tp: int = 1) -> int:
        return padded_vocab_size(self.vocab_size, tp, self.make_vocab_size_divisible_by)

    def shape(self, arch: str = "gpt") -> ModelShape:
        """This model as core/plan sees it: the one description its parameters and FLOPs are
        counted from (gpt and llama count alike; arch only names the layout)."""
        return ModelShape(
            num_layers=self.num_layers, hidden_size=self.hidden_size, num_heads=self.num_heads,
            ffn_hidden_size=self.ffn_hidden_size, vocab_size=self.vocab_size, seq_length=self.seq_length,
            num_kv_heads=self.num_kv_heads, kv_channels=self.kv_channels, activation=self.activation,
            tie_embeddings=self.tie_embeddings, arch=arch, position=self.position, norm=self.norm, bias=self.bias,
            dropout=bool(self.dropout or self.attention_dropout), vocab_multiple=self.make_vocab_size_divisible_by,
            adapter_size=self.adapter_size,
            **({} if self.moe is None else dict(num_experts=self.moe.num_experts, top_k=self.moe.top_k,
                                                moe_every=self.moe.every, moe_ffn_hidden_size=self.moe.ffn_hidden_size,
                                                capacity_factor=self.moe.capacity_factor)))


def gpt2_layout(**kw) -> GPTConfig:
    """Learned positions, LayerNorm, GELU, biases, tied embeddings."""
    base = dict(position="learned", norm="layernorm", activation="gelu", bias=True, tie_embeddings=True)
    return GPTConfig(**{**base, **kw})


def llama_layout(**kw) -> GPTConfig:
    """RoPE, RMSNorm, SwiGLU, no biases, grouped-query attention, untied head."""
    base = dict(position="rope", norm="rmsnorm", activation="swiglu", bias=False, tie_embeddings=False,
                norm_eps=1e-5)
    return GPTConfig(**{**base, **kw})


TINY = {
    "gpt-tiny": lambda **kw: gpt2_layout(**{**dict(num_layers=2, hidden_size=64, num_heads=4, vocab_size=300,
                                                   seq_length=32), **kw}),
    "llama-tiny": lambda **kw: llama_layout(**{**dict(num_layers=2, hidden_size=64, num_heads=8, num_kv_heads=4,
                                                      ffn_hidden_size=96, vocab_size=300, seq_length=32), **kw}),
}


def num_parameters(cfg: GPTConfig, tp: int = 1) -> int:
    """Parameters of the whole model (padded vocabulary at this tp, as trained): core/plan counts."""
    return total_params(cfg.shape(), tp)


def flops_per_iteration(cfg: GPTConfig, batch: int, seq: int | None = None, tp: int = 1) -> float:
    """Model FLOPs of one training iteration (forward + backward), Megatron-LM's formula with
    attention counted causally (core/plan/flops.py model_flops)."""
    return model_flops(cfg.shape(), batch, seq or cfg.seq_length, tp)


def flops_per_token(cfg: GPTConfig, seq: int | None = None) -> float:
    s = seq or cfg.seq_length
    return flops_per_iteration(cfg, 1, s) / s
