"""Published scaling results (../shared/reference/scaling.md, and the Megatron-Core MoE README's
Mixtral 8x7B figure) and the planner's residual on each.

A row's published TFLOP/s follows its paper's FLOP convention, so the planner's predicted step
time is turned into TFLOP/s with that same convention before comparing: Narayanan et al. 2021 and
MT-NLG count eq. 3 (recompute and the full attention core), the Megatron-LM H100 table counts model
FLOPs with the full attention core. Settings a paper does not state (micro-batch size, the number
of interleaved chunks) follow one rule for all rows, written next to each source below.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from megazoo.core.plan.hardware import DEFAULT_EFFICIENCY, get_gpu
from megazoo.core.plan.planner import plan
from megazoo.core.plan.shapes import Efficiency, Layout, ModelShape


@dataclass(frozen=True)
class PublishedRow:
    source: str
    label: str
    shape: ModelShape
    layout: Layout
    gpu: str
    tflops: float  # published TFLOP/s per GPU
    convention: str  # "narayanan" | "megatron2024"
    step_time_s: float | None = None
    interleave_assumed: bool = False  # vpp came from minimal_interleave, not from the paper


def gpt(params: str, heads: int, hidden: int, layers: int, vocab: int, seq: int, tied: bool) -> ModelShape:
    return ModelShape(num_layers=layers, hidden_size=hidden, num_heads=heads, ffn_hidden_size=4 * hidden,
                      vocab_size=vocab, seq_length=seq, tie_embeddings=tied, name=f"gpt-{params}")


def minimal_interleave(layers_per_stage: int) -> int:
    """Smallest number of model chunks > 1 that divides a stage's layers (1 for a single layer)."""
    for v in range(2, layers_per_stage + 1):
        if layers_per_stage % v == 0:
            return v
    return 1


# Narayanan et al. 2021, Table 1 (A100-80GB, Selene). The paper: interleaved schedule with the
# scatter/gather optimisation, full recompute (eq. 3), V = 51200, s = 2048. Not stated, assumed:
# micro-batch 1 and the smallest interleaving that divides each stage's layers; no sequence
# parallelism, no fused attention, no overlap of gradient reduction (none existed in 2021).
NARAYANAN = [  # params, heads, hidden, layers, tp, pp, gpus, batch, TFLOP/s
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137), ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142), ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135),
    ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138), ("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140),
    ("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148), ("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155),
    ("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163), ("1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 163),
]

# Megatron-LM README, H100 weak scaling: V = 131072 (untied), s = 4096, overlapped gradient reduce,
# parameter gather and TP communication; Megatron-Core with fused attention, sequence parallelism and
# the distributed optimizer. Assumed as above: micro-batch 1, the smallest interleaving.
H100 = [  # size, heads, hidden, layers, tp, pp, gpus, batch, TFLOP/s
    ("1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8), ("7.1B", 32, 4096, 30, 2, 1, 96, 192, 465.9),
    ("16B", 48, 6144, 32, 4, 1, 192, 192, 489.1), ("32B", 56, 7168, 48, 8, 1, 384, 192, 459.6),
    ("70B", 64, 8192, 84, 8, 2, 768, 384, 419.7), ("119B", 80, 10240, 92, 8, 4, 1536, 768, 420.5),
    ("177B", 96, 12288, 96, 8, 6, 2304, 1152, 432.8), ("314B", 128, 16384, 96, 8, 8, 3072, 1536, 474.4),
    ("462B", 144, 18432, 112, 8, 16, 6144, 3072, 459.9),
]

# MT-NLG 530B (Smith et al. 2022): DeepSpeed pipeline (plain 1F1B, full activations sent between
# stages) + Megatron tensor parallelism, TP 8 x PP 35, global batch 1920, micro-batch 1, full recompute.
# Its table gives seconds per iteration at DP 8, 10 and 12 (280 GPUs per replica); all three are checked.
MTNLG = [(2240, 126.0, 60.1), (2800, 121.0, 50.2), (3360, 113.0, 44.4)]


# Megatron-Core MoE README as of MCore v0.8 (NVIDIA/Megatron-LM, megatron/core/transformer/moe/README.md):
# "Mixtral 8X7B bf16 training to achieve 438 TFLOPS as of MCore v0.8", with its "Reference Best
# Parallel Mapping" of MCore v0.8 for Mixtral 8x7B (dropless, all-to-all dispatcher, BF16): 64 GPUs
# (8 x H100 80GB HBM3 per server, InfiniBand 8 x 400 Gbit/s), seq 4096, TP 1, EP 8, PP 4, VP 8,
# MBS 1, GBS 256, vocabulary 32K. The model: 32 layers, hidden 4096, 32 heads, 8 query groups, ffn
# 14336 SwiGLU, RMSNorm, RoPE, no biases, untied output layer, 8 experts, top-2, every layer MoE.
# Assumed (the README's training example): the distributed optimizer with overlapped gradient
# reduce and parameter gather; the 438 TFLOP/s taken as this mapping's figure; balanced routing.
# VP 8 is read as 8 model chunks per pipeline rank (one layer each). The later README's 468 TFLOP/s
# (MCore v0.9) keeps the same v0.8 mapping table; the v0.8 figure is the one next to it.
MIXTRAL_SOURCE = "Megatron-Core MoE README (MCore v0.8)"
MIXTRAL = [  # gpus, tp, ep, pp, vpp, micro-batch, global batch, TFLOP/s
    (64, 1, 8, 4, 8, 1, 256, 438.0),
]


def mixtral_8x7b() -> ModelShape:
    return ModelShape(num_layers=32, hidden_size=4096, num_heads=32, num_kv_heads=8, ffn_hidden_size=14336,
                      vocab_size=32000, seq_length=4096, activation="swiglu", tie_embeddings=False, arch="llama",
                      position="rope", norm="rmsnorm", bias=False, dropout=False, num_experts=8, top_k=2,
                      name="mixtral-8x7b")


def published_rows() -> list[PublishedRow]:
    rows: list[PublishedRow] = []
    for size, heads, hidden, layers, tp, pp, gpus, batch, tflops in NARAYANAN:
        shape = gpt(size, heads, hidden, layers, 51200, 2048, tied=True)
        vpp = minimal_interleave(layers // pp) if pp > 1 else 1
        layout = Layout(gpus=gpus, tp=tp, pp=pp, vpp=vpp, micro_batch=1, global_batch=batch, sp=False,
                        recompute="full", flash_attention=False, scatter_gather=True)
        rows.append(PublishedRow("Narayanan et al. 2021", f"{size} on {gpus} A100", shape, layout, "a100-80gb",
                                 tflops, "narayanan", interleave_assumed=vpp > 1))
    mtnlg = gpt("530B", 128, 20480, 105, 51200, 2048, tied=True)
    for gpus, tflops, seconds in MTNLG:
        layout = Layout(gpus=gpus, tp=8, pp=35, micro_batch=1, global_batch=1920, sp=False, recompute="full",
                        flash_attention=False, scatter_gather=False)
        rows.append(PublishedRow("MT-NLG (Smith et al. 2022)", f"530B on {gpus} A100", mtnlg, layout, "a100-80gb",
                                 tflops, "narayanan", seconds))
    for size, heads, hidden, layers, tp, pp, gpus, batch, tflops in H100:
        shape = gpt(size, heads, hidden, layers, 131072, 4096, tied=False)
        vpp = minimal_interleave(layers // pp) if pp > 1 else 1
        layout = Layout(gpus=gpus, tp=tp, pp=pp, vpp=vpp, micro_batch=1, global_batch=batch, recompute="none",
                        distributed_optimizer=True, flash_attention=True, overlap_grad_reduce=True,
                        overlap_param_gather=True, tp_comm_overlap=tp > 1)
        rows.append(PublishedRow("Megatron-LM H100 weak scaling", f"{size} on {gpus} H100", shape, layout, "h100",
                                 tflops, "megatron2024", interleave_assumed=vpp > 1))
    for gpus, tp, ep, pp, vpp, mb, batch, tflops in MIXTRAL:
        layout = Layout(gpus=gpus, tp=tp, pp=pp, vpp=vpp, ep=ep, micro_batch=mb, global_batch=batch,
                        recompute="none", distributed_optimizer=True, flash_attention=True,
                        overlap_grad_reduce=True, overlap_param_gather=True, tp_comm_overlap=tp > 1)
        rows.append(PublishedRow(MIXTRAL_SOURCE, f"Mixtral 8x7B on {gpus} H100", mixtral_8x7b(), layout, "h100",
                                 tflops, "megatron2024"))
    return rows


def evaluate(row: PublishedRow, eff: Efficiency = DEFAULT_EFFICIENCY) -> dict:
    """The planner's prediction for one published row, in the row's own FLOP convention.
    Rows whose vpp is assumed also carry the residual with the plain schedule (vpp 1), which shows
    how much of their agreement rests on the interleaving rule."""
    p = plan(row.shape, row.layout, row.gpu, eff, flops_convention=row.convention)
    predicted = p.tflops_per_gpu
    out = dict(source=row.source, label=row.label, tp=row.layout.tp, pp=row.layout.pp, vpp=row.layout.vpp,
               dp=row.layout.dp, cp=row.layout.cp, ep=row.layout.ep, gpus=row.layout.gpus, batch=row.layout.batch, convention=row.convention,
               published_tflops=row.tflops, predicted_tflops=predicted, residual=predicted / row.tflops - 1.0,
               predicted_step_s=p.step_time_s, published_step_s=row.step_time_s,
               peak_fraction=predicted / get_gpu(row.gpu).peak_tflops,
               memory_gb=p.memory_gb_per_gpu, fits=p.fits, bubble=p.bubble_fraction,
               interleave_assumed=row.interleave_assumed)
    if row.step_time_s:
        out["step_residual"] = p.step_time_s / row.step_time_s - 1.0
    if row.interleave_assumed:
        plain = plan(row.shape, replace(row.layout, vpp=1), row.gpu, eff, flops_convention=row.convention)
        out["residual_without_interleaving"] = plain.tflops_per_gpu / row.tflops - 1.0
    return out


def validation_table(eff: Efficiency = DEFAULT_EFFICIENCY) -> list[dict]:
    return [evaluate(r, eff) for r in published_rows()]
