"""The configuration of a stack of transformer layers (shared by every architecture in the zoo)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class MoEConfig:
    """Mixture-of-experts MLPs (`model.moe.*`): a top-k router over `num_experts` expert MLPs in every
    `every`-th layer (layers every-1, 2*every-1, ...; 1 = every layer). `capacity_factor` None is
    dropless (every routed token is computed); a number caps each expert at
    capacity_factor * tokens * top_k / num_experts tokens and drops the rest. `aux_loss` and `z_loss`
    are the coefficients of the load-balancing and router z-losses (0 = off). `parallel.ep` must divide
`num_experts` (checked when the layer is built, core/nn/moe/experts.py)."""

    num_experts: int = 4
    top_k: int = 2
    every: int = 1
    capacity_factor: float | None = None
    aux_loss: float = 0.0
    z_loss: float = 0.0
    gating: str = "softmax"  # softmax | sigmoid
    ffn_hidden_size: int | None = None  # an expert's hidden size; None: the dense model's ffn_hidden_size
    renormalize: bool = True  # top_k > 1: the k combine weights sum to one (Mixtral); top-1 keeps its probability
    grouped_gemm: bool = True  # one grouped GEMM for all experts where torch has one; false: a loop

    def __post_init__(self):
        for name in ("num_experts", "top_k", "every"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"model.moe.{name} must be a positive integer, got {value!r}")
        if self.top_k > self.num_experts:
            raise ValueError(f"model.moe.top_k={self.top_k} is larger than model.moe.num_experts="
                             f"{self.num_experts}; a token cannot go to more experts than there are")
        if self.capacity_factor is not None and not self.capacity_factor > 0:
            raise ValueError(f"model.moe.capacity_factor must be > 0 (or unset for dropless), got {self.capacity_factor!r}")
        if self.gating not in ("softmax", "sigmoid"):
            raise ValueError(f"model.moe.gating must be softmax or sigmoid, got {self.gating!r}")
        if self.aux_loss < 0 or self.z_loss < 0:
            raise ValueError("model.moe.aux_loss and model.moe.z_loss must be >= 0")

    def is_moe_layer(self, layer_number: int) -> bool:
        """Whether layer `layer_number` (0-based, global) has experts instead of a dense MLP."""
        return (layer_number + 1) % self.every == 0


@dataclass
class TransformerConfig:
    num_layers: int = 2
    hidden_size: int = 64
    num_heads: int = 4
    num_kv_heads: int | None = None  # None: multi-head attention (= num_heads)
    ffn_hidden_size: int | None = None  # None: 4 * hidden (GELU) or Llama's rounding (SwiGLU)
    kv_channels: int | None = None  # head dim; None: hidden / heads
    activation: str = "gelu"  # gelu (tanh approximation, as GPT-2) | gelu_exact | swiglu | geglu | relu
    norm: str = "layernorm"  # layernorm | rmsnorm
    norm_eps: float = 1e-5
    position: str = "learned"  # learned | rope | none | relative (T5: the zoo adds the bias)
    rope_theta: float = 10000.0
    bias: bool = True  # biases in linear layers
    dropout: float = 0.0  # hidden (residual) dropout
    attention_dropout: float = 0.0
    init_std: float = 0.02
    scaled_init: bool = True  # output layers use std / sqrt(2 * num_layers), as GPT-2 / Megatron
    post_norm: bool = False  # original BERT layout (norm after the residual add)
    causal: bool = True
    recompute: str = "none"  # none | selective (core attention) | full (whole layer)
    attention_scale: float | None = None  # None: 1/sqrt(head dim)
    adapter_size: int = 0  # bottleneck adapters after attention and MLP of every layer; 0: none
    moe: MoEConfig | None = None  # mixture-of-experts MLPs; None: dense

    def __post_init__(self):
        if isinstance(self.moe, dict):  # from YAML / to_dict()
            known = set(MoEConfig.__dataclass_fields__)
            unknown = sorted(set(self.moe) - known)
            if unknown:
                raise ValueError(f"unknown model.moe keys {unknown}; valid keys: {sorted(known)}")
            self.moe = MoEConfig(**self.moe)
        if self.num_kv_heads is None:
            self.num_kv_heads = self.num_heads
        if self.kv_channels is None:
            if self.hidden_size % self.num_heads:
                raise ValueError(f"hidden_size {self.hidden_size} is not divisible by num_heads {self.num_heads}")
            self.kv_channels = self.hidden_size // self.num_heads
        if self.ffn_hidden_size is None:
            if self.activation == "swiglu":  # Llama: 2/3 of 4h, rounded up to a multiple of 256
                self.ffn_hidden_size = 256 * ((int(8 * self.hidden_size / 3) + 255) // 256)
            else:
                self.ffn_hidden_size = 4 * self.hidden_size
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads {self.num_heads} is not divisible by num_kv_heads {self.num_kv_heads}")
        if self.recompute not in ("none", "selective", "full"):
            raise ValueError(f"recompute must be none, selective or full, got {self.recompute!r}")
        if self.activation not in ("gelu", "gelu_exact", "swiglu", "geglu", "relu"):
            raise ValueError(f"activation must be gelu, gelu_exact, swiglu, geglu or relu, got {self.activation!r}")
        if self.norm not in ("layernorm", "rmsnorm"):
            raise ValueError(f"norm must be layernorm or rmsnorm, got {self.norm!r}")
        if self.adapter_size < 0:
            raise ValueError(f"adapter_size must be >= 0 (0: no adapters), got {self.adapter_size}")

    def check_tensor_parallel(self, tp: int) -> None:
        """Raise a clear error when the model cannot be split over `tp` ranks."""
        problems = []
        if self.num_heads % tp:
            problems.append(f"num_heads={self.num_heads}")
        if self.num_kv_heads % tp:
            problems.append(f"num_kv_heads={self.num_kv_heads}")
        if self.ffn_hidden_size % tp:
            problems.append(f"ffn_hidden_size={self.ffn_hidden_size}")
        if self.adapter_size % tp:  # the adapter bottleneck is split over tp like the MLP
            problems.append(f"adapter_size={self.adapter_size}")
        if problems:
            raise ValueError(f"tensor parallelism tp={tp} must divide {', '.join(problems)}; "
                             f"choose a tp that divides them")

    @property
    def output_std(self) -> float:
        return self.init_std / (2.0 * self.num_layers) ** 0.5 if self.scaled_init else self.init_std
