"""Model FLOPs: the Megatron formula of DESIGN.md, plus the conventions of published tables.

Model FLOPs count one forward and one backward pass (3 passes worth of GEMMs), no recompute. The
attention core is counted causally for decoders (half the s x s work), in full for encoders.
"""

from __future__ import annotations

from megazoo.core.plan.params import shape_vocab
from megazoo.core.plan.shapes import ModelShape, PlanError


def model_flops(shape: ModelShape, batch: int, seq: int | None = None, tp: int = 1,
                causal: bool | None = None) -> float:
    """FLOPs of one training iteration of `batch` sequences:
    B*s*(6*h*f*E*L + 6*(h*(q+2k) + q*h)*L + 6*h*V) + c*q*B*s^2*L, with c = 6 causal, 12 not.

    Bottleneck adapters add 6*h*4r per layer and token (two adapters, two h x r GEMMs each). BERT
    adds its masked-LM head's dense layer (6*h*h per token); a model without an LM head (a
    fine-tuned task model) counts neither that nor the vocabulary projection (the small task heads
    are not counted). T5: the encoder runs over s tokens; the decoder (causal self-attention,
    cross-attention, MLP) and the output layer over the target length (decoder_seq_length); the
    cross-attention K/V projections read the encoder output, so they run over s tokens.

    An MoE layer runs top_k expert MLPs per token (6*h*f_e*E*top_k) and its router (6*h*num_experts)
    in place of the MLP: the active FLOPs (capacity-factor drops are not subtracted)."""
    s = seq or shape.seq_length
    h, f, q, k = shape.hidden_size, shape.ffn_hidden_size, shape.q_size, shape.kv_size
    e = 3 if shape.gated else 2
    causal = shape.causal if causal is None else causal
    attn_coeff = 6 if causal else 12
    proj = 6 * (h * (q + 2 * k) + q * h)
    layer = 6 * h * f * e + proj + 6 * h * 4 * shape.adapter_size
    n = shape.num_layers
    head = 6 * h * shape_vocab(shape, tp) if shape.lm_head else 0  # per token of the output layer
    if shape.traits.mlm_heads and shape.lm_head:  # the masked-LM head's dense transform
        head += 6 * h * h
    if not shape.traits.encoder_decoder:
        n_moe = shape.num_moe_layers
        moe_extra = n_moe * (6 * h * shape.expert_ffn * e * shape.top_k + 6 * h * shape.num_experts - 6 * h * f * e)
        return float(batch * s * (layer * n + moe_extra + head) + attn_coeff * q * batch * s * s * n)
    sd = shape.decoder_seq_length or s
    d = shape.num_decoder_layers
    encoder = s * layer * n + attn_coeff * q * s * s * n
    cross = 6 * (sd * (h * q + q * h) + s * h * 2 * k)  # q and output over the target, K/V over the encoder
    decoder = sd * layer * d + cross * d + 6 * q * sd * sd * d + 12 * q * sd * s * d
    return float(batch * (encoder + decoder + sd * head))


def flops_per_token(shape: ModelShape, seq: int | None = None) -> float:
    """Training FLOPs (forward + backward) per token at the model's sequence length."""
    s = seq or shape.seq_length
    return model_flops(shape, 1, s) / s


def narayanan_flops(shape: ModelShape, batch: int, seq: int | None = None, vocab: int | None = None) -> float:
    """Narayanan et al. 2021, eq. 3: 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)); counts the extra forward
    pass of full recompute and the attention core in full. Their tables (and MT-NLG's) use it. Dense
    models only: an MoE shape is counted as its dense model."""
    s = seq or shape.seq_length
    h, n = shape.hidden_size, shape.num_layers
    v = vocab or shape.vocab_size
    return 96.0 * batch * s * n * h * h * (1 + s / (6 * h) + v / (16 * n * h))


def megatron_2024_flops(shape: ModelShape, batch: int, seq: int | None = None, vocab: int | None = None,
                        causal: bool = False) -> float:
    """Megatron-LM's 2024 model-FLOPs count (no recompute, attention core counted in full):
    the DESIGN.md formula with c = 12; the H100 weak-scaling table reports it. MoE layers count
    top_k expert MLPs and no router (`num_experts_routed_to` of Megatron-LM's count), the convention
    of the Megatron-Core MoE README's Mixtral figure. causal=True is the 2025 count
    (`megatron2025`): the same, with the attention core's "causal mask (only half of the mask is
    non-zero)", c = 6."""
    v = vocab or shape.vocab_size
    s = seq or shape.seq_length
    h, f, q, k = shape.hidden_size, shape.ffn_hidden_size, shape.q_size, shape.kv_size
    e = 3 if shape.gated else 2
    n, n_moe = shape.num_layers, shape.num_moe_layers
    mlp = 6 * h * f * e * (n - n_moe) + 6 * h * shape.expert_ffn * e * shape.top_k * n_moe
    return float(batch * s * (6 * (h * (q + 2 * k) + q * h) * n + mlp + 6 * h * v)
                 + (6 if causal else 12) * q * batch * s * s * n)


# The FLOP conventions a TFLOP/s figure can be reported in (`megazoo plan --flops-convention`).
# Published tables differ, so a TFLOP/s figure means little without its convention's name.
FLOPS_CONVENTIONS = {
    "model": "model FLOPs: forward + backward, no recompute, causal attention counted as half (what MFU uses)",
    "narayanan": "Narayanan et al. 2021 eq. 3 with full recompute counted (4 passes) and the full attention "
                 "core; the convention of their Table 1 and of MT-NLG's 126 TFLOP/s",
    "megatron2024": "Megatron-LM's num_floating_point_operations (2024): model FLOPs, no recompute, the full "
                    "attention core; the convention of the Megatron-LM H100 weak-scaling table",
    "megatron2025": "Megatron-LM's num_floating_point_operations (2025): megatron2024 with the attention core "
                    "counted causally (half); the convention of the Megatron-MoE model zoo's Qwen3 tables",
}


def convention_flops(shape: ModelShape, batch: int, seq: int | None = None, tp: int = 1,
                     convention: str = "model") -> float:
    """FLOPs of one iteration in a named convention. The vocabulary is the padded one at `tp`, as
    Megatron-LM counts it (Narayanan et al.'s V = 51,200 is GPT-2's 50,257 padded)."""
    vocab = shape_vocab(shape, tp)
    if convention == "model":
        return model_flops(shape, batch, seq, tp=tp)
    if convention == "narayanan":
        return narayanan_flops(shape, batch, seq, vocab)
    if convention in ("megatron2024", "megatron2025"):
        return megatron_2024_flops(shape, batch, seq, vocab, causal=convention == "megatron2025")
    raise PlanError(f"unknown FLOP convention {convention!r}; one of {', '.join(FLOPS_CONVENTIONS)}")
