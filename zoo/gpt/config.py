"""GPT configuration: the GPT-2 / Megatron-GPT layout and the Llama layout as settings of one model."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from megazoo.core.nn.config import TransformerConfig
from megazoo.core.parallel.embedding import padded_vocab_size


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
    """Parameters of the whole model (padded vocabulary at this tp, as trained)."""
    h, L, f, d = cfg.hidden_size, cfg.num_layers, cfg.ffn_hidden_size, cfg.kv_channels
    V = cfg.padded_vocab(tp)
    q, kv = cfg.num_heads * d, cfg.num_kv_heads * d
    attn = h * (q + 2 * kv) + q * h + (q + 2 * kv + h if cfg.bias else 0)
    mlp = (3 if cfg.activation == "swiglu" else 2) * h * f + ((2 if cfg.activation == "swiglu" else 1) * f + h if cfg.bias else 0)
    norms = 2 * h * (2 if cfg.norm == "layernorm" else 1)
    r = cfg.adapter_size
    adapters = 2 * (2 * h * r + r + h) if r else 0  # two bottleneck adapters, with biases
    per_layer = attn + mlp + norms + adapters
    emb = V * h + (cfg.seq_length * h if cfg.position == "learned" else 0)
    head = 0 if cfg.tie_embeddings else V * h
    final = h * (2 if cfg.norm == "layernorm" else 1)
    return L * per_layer + emb + head + final


def flops_per_iteration(cfg: GPTConfig, batch: int, seq: int | None = None, tp: int = 1) -> float:
    """Model FLOPs of one training iteration (forward + backward), Megatron-LM's formula:
    B*s*(6*h*f*E*L + 6*(h*(q+2k) + q*h)*L + 6*h*V) + 6*q*B*s^2*L, attention counted causally."""
    s = seq or cfg.seq_length
    h, L, f = cfg.hidden_size, cfg.num_layers, cfg.ffn_hidden_size
    E = 3 if cfg.activation == "swiglu" else 2
    q = cfg.kv_channels * cfg.num_heads
    k = cfg.kv_channels * cfg.num_kv_heads
    V = cfg.padded_vocab(tp)
    A = 4 * cfg.adapter_size  # two adapters of two h x r matmuls each
    return batch * s * (6 * h * f * E * L + 6 * (h * (q + 2 * k) + q * h) * L + 6 * h * A * L + 6 * h * V) \
        + 6 * q * batch * s * s * L


def flops_per_token(cfg: GPTConfig, seq: int | None = None) -> float:
    s = seq or cfg.seq_length
    return flops_per_iteration(cfg, 1, s) / s
