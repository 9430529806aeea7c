"""The published large training runs the planner is checked against, each with its source.

Every row carries what its source states (model shape, layout, batch, sequence, GPU, and the step
time, TFLOP/s or MFU it reports) and, in `assumed`, the settings the source does not state with
the value the row takes. A figure that is not in the cited table or section is never entered:
rows whose source gives only MFU keep the MFU (`mfu`), and TFLOP/s is derived from it with the
GPU's datasheet peak, as the paper did. Sources this table does not hold, and why, are listed in
bench/plan_rows.md.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from megazoo.core.plan.shapes import Layout, ModelShape


@dataclass(frozen=True)
class PublishedRow:
    source: str
    label: str
    shape: ModelShape
    layout: Layout
    gpu: str
    tflops: float | None  # published TFLOP/s per GPU (None: the source gives MFU and/or step time)
    convention: str  # the FLOP count behind the published figure: "narayanan" | "megatron2024" | "model"
    step_time_s: float | None = None  # published seconds per iteration
    interleave_assumed: bool = False  # vpp came from minimal_interleave, not from the paper
    mfu: float | None = None  # published MFU (of the dense bf16 peak), where the source gives it
    cite: str = ""  # table, section or URL of the figure
    assumed: str = ""  # settings the source does not state, and the value taken
    flops_shape: ModelShape | None = None  # the model the published FLOPs count, when `shape` is a stand-in


def gpt(params: str, heads: int, hidden: int, layers: int, vocab: int, seq: int, tied: bool) -> ModelShape:
    return ModelShape(num_layers=layers, hidden_size=hidden, num_heads=heads, ffn_hidden_size=4 * hidden,
                      vocab_size=vocab, seq_length=seq, tie_embeddings=tied, name=f"gpt-{params}")


def minimal_interleave(layers_per_stage: int) -> int:
    """Smallest number of model chunks > 1 that divides a stage's layers (1 for a single layer)."""
    for v in range(2, layers_per_stage + 1):
        if layers_per_stage % v == 0:
            return v
    return 1


def interleave(layers: int, pp: int) -> int:
    return minimal_interleave(layers // pp) if pp > 1 else 1


# ---- Narayanan et al. 2021 (arXiv 2104.04473), Table 1 (A100-80GB, Selene) ---------------------------
# The paper: interleaved schedule with the scatter/gather optimisation, full recompute (eq. 3),
# V = 51200, s = 2048. Not stated, assumed: micro-batch 1 and the smallest interleaving that divides
# each stage's layers; no sequence parallelism, no fused attention, no overlap of gradient reduction.
NARAYANAN_SOURCE = "Narayanan et al. 2021"
NARAYANAN_ASSUMED = "micro-batch 1; vpp the smallest interleaving; gradient all-reduce not overlapped"
NARAYANAN = [  # params, heads, hidden, layers, tp, pp, gpus, batch, TFLOP/s
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137), ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142), ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135),
    ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138), ("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140),
    ("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148), ("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155),
    ("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163), ("1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 163),
]
# Table 2 (PTD-P against ZeRO-3): the 174.6B model (96 layers, hidden 12288, 96 heads), model-parallel
# size 96, global batch 1536, micro-batch 1, on 384 / 768 / 1536 GPUs. The split of the 96 into
# TP 8 x PP 12 is assumed (TP 8 inside a node, as every other row of the paper).
NARAYANAN_T2 = [(384, 153), (768, 149), (1536, 141)]  # gpus, TFLOP/s

# ---- MT-NLG 530B (Smith et al. 2022, arXiv 2201.11990), Table 1 ----------------------------------------
# DeepSpeed pipeline (plain 1F1B, full activations sent between stages) + Megatron tensor
# parallelism, TP 8 x PP 35, global batch 1920, micro-batch 1, full recompute, seconds per iteration
# and TFLOP/s at DP 8, 10 and 12 (280 GPUs per replica).
MTNLG_SOURCE = "MT-NLG (Smith et al. 2022)"
MTNLG = [(2240, 126.0, 60.1), (2800, 121.0, 50.2), (3360, 113.0, 44.4)]

# ---- Megatron-LM README, H100 weak scaling ----------------------------------------------------------------
# V = 131072 (untied), s = 4096, overlapped gradient reduce, parameter gather and TP communication;
# Megatron-Core with fused attention, sequence parallelism and the distributed optimizer.
H100_SOURCE = "Megatron-LM H100 weak scaling"
H100 = [  # size, heads, hidden, layers, tp, pp, gpus, batch, TFLOP/s
    ("1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8), ("7.1B", 32, 4096, 30, 2, 1, 96, 192, 465.9),
    ("16B", 48, 6144, 32, 4, 1, 192, 192, 489.1), ("32B", 56, 7168, 48, 8, 1, 384, 192, 459.6),
    ("70B", 64, 8192, 84, 8, 2, 768, 384, 419.7), ("119B", 80, 10240, 92, 8, 4, 1536, 768, 420.5),
    ("177B", 96, 12288, 96, 8, 6, 2304, 1152, 432.8), ("314B", 128, 16384, 96, 8, 8, 3072, 1536, 474.4),
    ("462B", 144, 18432, 112, 8, 16, 6144, 3072, 459.9),
]

# ---- Megatron-Core MoE README, Mixtral 8x7B ------------------------------------------------------------------
# "Mixtral 8X7B bf16 training to achieve 438 TFLOPS as of MCore v0.8", with its "Reference Best Parallel
# Mapping": 64 H100 (8 per server, 8 x 400 Gbit/s InfiniBand), seq 4096, TP 1, EP 8, PP 4, VP 8, MBS 1,
# GBS 256, vocabulary 32K, dropless all-to-all dispatcher. VP 8 is read as 8 model chunks per rank.
# The same README a release later: "With MCore v0.9, we've achieved remarkable performance of 468 TFLOPS
# for Mixtral 8X7B bf16 training", beside the same mapping table (still headed "MCore v0.8"; PyTorch
# 24.09 with TransformerEngine v1.11): a later software release on the same mapping, so one plan for
# both rows. They are one source: leave-one-source-out leaves both out together.
MIXTRAL_SOURCE = "Megatron-Core MoE README"
MIXTRAL = [  # release, gpus, tp, ep, pp, vpp, micro-batch, global batch, TFLOP/s
    ("v0.8", 64, 1, 8, 4, 8, 1, 256, 438.0), ("v0.9", 64, 1, 8, 4, 8, 1, 256, 468.0)]

# ---- Korthikanti et al. 2022 (arXiv 2205.05198), "Reducing Activation Recomputation" -----------------------
# Table 3 (configurations: heads, hidden, layers, TP, PP, GPUs, global batch, micro-batch; s = 2048,
# V = 51200, A100-80GB) and Table 4 (seconds per iteration with full recompute, and with sequence
# parallelism + selective recompute, "present work"); MFU in the paper counts model FLOPs with the full
# attention core (Megatron-LM's count). The abstract adds the 530B on 2240 GPUs: MFU 54.2% (present
# work) and 42.1% (full recompute); its global batch is not stated.
KORTHIKANTI_SOURCE = "Korthikanti et al. 2022"
KORTHIKANTI = [  # size, heads, hidden, layers, tp, pp, gpus, batch, micro-batch, s/iter full, s/iter present
    ("22B", 64, 6144, 48, 8, 1, 8, 4, 4, 1.42, 1.10), ("175B", 96, 12288, 96, 8, 8, 64, 64, 1, 18.13, 13.75),
    ("530B", 128, 20480, 105, 8, 35, 280, 280, 1, 49.05, 37.83),
    ("1T", 160, 25600, 128, 8, 64, 512, 512, 1, 94.42, 71.49),
]
KORTHIKANTI_2240 = [("full", 0.421), ("selective", 0.542)]

# ---- Llama 3 405B (Llama Team 2024, arXiv 2407.21783), Table 4 ----------------------------------------------
# 126 layers, hidden 16384, 128 heads, 8 KV heads, FFN 53248 SwiGLU, vocabulary 128,256, untied; H100
# 80GB (700 W) on a RoCE fabric, 400 Gbit/s per GPU; 16M tokens per batch. Rows: GPUs, TP, CP, PP, DP,
# sequence, batch per DP rank, TFLOP/s per GPU (BF16 MFU 43% / 41% / 38%).
LLAMA3_SOURCE = "Llama 3 405B (Llama Team 2024)"
LLAMA3 = [(8192, 8, 1, 16, 64, 8192, 32, 430.0), (16384, 8, 1, 16, 128, 8192, 16, 400.0),
          (16384, 8, 16, 16, 8, 131072, 16, 380.0)]
LLAMA3_ASSUMED = ("micro-batch 1; TFLOP/s counted with the full attention core, as Megatron-LM counts (the paper "
                  "does not give its count); flash attention; the 128K row with selective recompute (the paper says "
                  "only that 8K sequences train without activation checkpointing); the interleaved schedule takes "
                  "N = pp = 16 micro-batches per round (the paper tunes N without giving it; "
                  "torch.distributed.pipelining's flexible interleaved 1F1B takes 16 for 16 or 32 micro-batches): "
                  "the 8K-GPU row's 32 micro-batches keep 141 layer activations in flight on stage 1, 80.1 GiB of 80 "
                  "with the planner's 3 GiB overhead; gradients reduce-scattered per micro-batch under the backward "
                  "(the planner's ZeRO-2)")
LLAMA3_STATED = ("126 layers on 16 stages with the embedding and the output layer each in a layer's place, so "
                 "that the first and last stage hold one layer fewer and the first chunk holds only the embedding "
                 "(3.3.2): one layer place per chunk, 128 / 16 = vpp 8 (embedding_slots); FSDP sharding the "
                 "gradients and optimizer state, weights kept whole after the forward (3.3.2: ZeRO-2, shard grads); "
                 "8K sequences without activation checkpointing (3.3.2: recompute none)")

# ---- Nemotron-4 340B (NVIDIA 2024, arXiv 2406.11704), Table 2 -------------------------------------------------
# 96 layers, hidden 18432, 96 heads, 8 KV heads, FFN 73728 squared ReLU, RoPE, no bias, untied,
# vocabulary 256,000, s = 4096; 768 DGX H100 nodes (8 x 400 Gbit/s InfiniBand per node); TP 8, PP 12
# with interleaving, DP 16 / 32 / 64. Rows: GPUs, global batch, seconds per iteration, MFU.
NEMOTRON_SOURCE = "Nemotron-4 340B (NVIDIA 2024)"
NEMOTRON = [(1536, 768, 10.3, 0.424), (3072, 1536, 10.3, 0.423), (6144, 2304, 8.0, 0.410)]

# ---- BLOOM 176B (BigScience 2022, arXiv 2211.05100, sec. 3.4) ------------------------------------------------
# 70 layers, hidden 14336, 112 heads, vocabulary 250,680 (padded to 250,880), s = 2048, global batch 2048, 384 A100-80GB
# (48 nodes, 8 GPUs with NVLink, 4 x 100 Gbit/s Omni-Path per node: 6.25 GB/s per GPU),
# Megatron-DeepSpeed with TP 4, PP 12, DP 8 (48 GPUs per replica) and ZeRO stage 1, bf16;
# "about 150 TFLOPs" per GPU (the BigScience 176B model card, bigscience.notion.site). The run's
# README and slurm script (github.com/bigscience-workshop/bigscience train/tr11-176B-ml) state
# micro-batch 2 ("MBS=2 performs the fastest"), --checkpoint-activations, the partition (pp rank 0:
# embedding + 5 blocks, ranks 1-10: 6 blocks, rank 11: 5 blocks + the tied output layer) and, in its
# days-to-go formula, 105 s per iteration at the global batch of 2048 (150 TFLOP/s implies 104.5 s).

# ---- OPT-175B (Zhang et al. 2022, arXiv 2205.01068, sec. 2.4) ---------------------------------------------
# 96 layers, hidden 12288, 96 heads, FFN 4h ReLU, learned positions, tied embeddings, vocabulary 50,272,
# s = 2048; 992 A100-80GB (Azure, 8 x 200 Gbit/s InfiniBand per node), Fully Sharded Data Parallel with
# Megatron-LM tensor parallelism 8 (dp 124), fp16, "up to 147 TFLOP/s per GPU", batch 2M tokens. The
# logbook's final note (metaseq projects/OPT/chronicles/final_update.md) gives the run's compute as
# 4.30E+23 FLOPs for 300B tokens: Narayanan et al.'s eq. 3 (recompute counted) to three digits, so the
# 147 is counted that way. metaseq's launcher (metaseq/launcher/opt_baselines.py, written after the 175B
# run from its script) sets the per-rank batch as (tokens // (gpus / tp)) // 2048 sequences with
# update-freq 1, full activation checkpointing and `--ddp-backend fully_sharded`.
OPT_SOURCE = "OPT-175B (Zhang et al. 2022)"
OPT_ASSUMED = ("8 sequences per data-parallel rank in one micro-batch (metaseq's rule with its M = 2^20: "
               "2M tokens // 124 ranks // 2048 = 8, so 992 sequences, 2.03M tokens, per step); FSDP as ZeRO-3 (weights, gradients and "
               "optimizer state sharded over the 124 ranks, weights gathered per layer in the forward and again "
               "in the backward with the next layer prefetched; metaseq's later baseline script turns the "
               "backward gather off, '--no-reshard-after-forward'), gradients reduce-scattered under the "
               "backward and counted in fp32 as megazoo's; full recompute; no sequence parallelism; unfused "
               "attention; TFLOP/s counted as eq. 3 (the logbook's 4.30E+23 FLOPs)")

BLOOM_SOURCE = "BLOOM 176B (BigScience 2022)"


def llama3_405b(seq: int) -> ModelShape:
    return ModelShape(num_layers=126, hidden_size=16384, num_heads=128, num_kv_heads=8, ffn_hidden_size=53248,
                      vocab_size=128256, seq_length=seq, activation="swiglu", tie_embeddings=False, arch="llama",
                      position="rope", norm="rmsnorm", bias=False, dropout=False, name="llama3-405b")


def nemotron4_340b() -> ModelShape:
    # squared ReLU: a plain (ungated) two-matrix MLP, as "relu" counts it
    return ModelShape(num_layers=96, hidden_size=18432, num_heads=96, num_kv_heads=8, ffn_hidden_size=73728,
                      vocab_size=256000, seq_length=4096, activation="relu", tie_embeddings=False, arch="llama",
                      position="rope", norm="layernorm", bias=False, dropout=False, name="nemotron4-340b")


def mixtral_8x7b() -> ModelShape:
    return ModelShape(num_layers=32, hidden_size=4096, num_heads=32, num_kv_heads=8, ffn_hidden_size=14336,
                      vocab_size=32000, seq_length=4096, activation="swiglu", tie_embeddings=False, arch="llama",
                      position="rope", norm="rmsnorm", bias=False, dropout=False, num_experts=8, top_k=2,
                      name="mixtral-8x7b")


def _a100_2021(gpus: int, tp: int, pp: int, layers: int, batch: int, **kw) -> Layout:
    return Layout(gpus=gpus, tp=tp, pp=pp, vpp=interleave(layers, pp), micro_batch=1, global_batch=batch, sp=False,
                  recompute="full", flash_attention=False, scatter_gather=True, **kw)


def _mcore_h100(gpus: int, tp: int, pp: int, vpp: int, batch: int, recompute: str = "none", **kw) -> Layout:
    return Layout(gpus=gpus, tp=tp, pp=pp, vpp=vpp, global_batch=batch, recompute=recompute, distributed_optimizer=True,
                  flash_attention=True, overlap_grad_reduce=True, overlap_param_gather=True, tp_comm_overlap=tp > 1,
                  **kw)


def published_rows() -> list[PublishedRow]:
    rows: list[PublishedRow] = []
    cite = "arXiv 2104.04473, Table 1"
    for size, heads, hidden, layers, tp, pp, gpus, batch, tflops in NARAYANAN:
        layout = _a100_2021(gpus, tp, pp, layers, batch)
        rows.append(PublishedRow(NARAYANAN_SOURCE, f"{size} on {gpus} A100", gpt(size, heads, hidden, layers, 51200,
                                 2048, tied=True), layout, "a100-80gb", tflops, "narayanan",
                                 interleave_assumed=layout.vpp > 1, cite=cite, assumed=NARAYANAN_ASSUMED))
    shape = gpt("174.6B", 96, 12288, 96, 51200, 2048, tied=True)
    for gpus, tflops in NARAYANAN_T2:
        layout = _a100_2021(gpus, 8, 12, 96, 1536)
        rows.append(PublishedRow(NARAYANAN_SOURCE, f"174.6B on {gpus} A100 (T2)", shape, layout, "a100-80gb", tflops,
                                 "narayanan", interleave_assumed=True, cite="arXiv 2104.04473, Table 2 (PTD-P)",
                                 assumed="model-parallel 96 as TP 8 x PP 12; " + NARAYANAN_ASSUMED))
    mtnlg = gpt("530B", 128, 20480, 105, 51200, 2048, tied=True)
    for gpus, tflops, seconds in MTNLG:
        layout = Layout(gpus=gpus, tp=8, pp=35, micro_batch=1, global_batch=1920, sp=False, recompute="full",
                        flash_attention=False, scatter_gather=False, pipeline_engine="deepspeed")
        rows.append(PublishedRow(MTNLG_SOURCE, f"530B on {gpus} A100", mtnlg, layout, "a100-80gb", tflops,
                                 "narayanan", seconds, cite="arXiv 2201.11990, Table 1",
                                 assumed="gradient all-reduce after the pipeline flush, not overlapped "
                                         "(DeepSpeed's pipeline engine)"))
    for size, heads, hidden, layers, tp, pp, gpus, batch, tflops in H100:
        layout = _mcore_h100(gpus, tp, pp, interleave(layers, pp), batch)
        rows.append(PublishedRow(H100_SOURCE, f"{size} on {gpus} H100", gpt(size, heads, hidden, layers, 131072, 4096,
                                 tied=False), layout, "h100", tflops, "megatron2024", interleave_assumed=layout.vpp > 1,
                                 cite="github.com/NVIDIA/Megatron-LM README, weak-scaling table",
                                 assumed="micro-batch 1; vpp the smallest interleaving"))
    for release, gpus, tp, ep, pp, vpp, mb, batch, tflops in MIXTRAL:
        layout = _mcore_h100(gpus, tp, pp, vpp, batch, ep=ep, micro_batch=mb)
        later = ("; v0.9's software changes (the all-to-all dispatcher upgraded in place, TE grouped GEMM) are not "
                 "modelled: the same plan as the v0.8 row") if release != "v0.8" else ""
        rows.append(PublishedRow(MIXTRAL_SOURCE, f"Mixtral 8x7B on {gpus} H100 (MCore {release})", mixtral_8x7b(), layout,
                                 "h100", tflops, "megatron2024",
                                 cite=f"NVIDIA/Megatron-LM megatron/core/transformer/moe/README.md (MCore {release} "
                                      "text, reference mapping table)",
                                 assumed="distributed optimizer with overlapped reduce and gather; balanced routing; "
                                         f"the {tflops:g} TFLOP/s taken as the reference mapping's figure" + later))
    rows += korthikanti_rows() + llama3_rows() + nemotron_rows() + opt_rows() + bloom_rows()
    return rows


def korthikanti_rows() -> list[PublishedRow]:
    rows = []
    cite = "arXiv 2205.05198, Tables 3 and 4"
    assumed = ("vpp the smallest interleaving (not stated; as Narayanan et al.'s rows, the same group's Megatron-LM); "
               "gradient all-reduce not overlapped")
    for size, heads, hidden, layers, tp, pp, gpus, batch, mb, full, present in KORTHIKANTI:
        shape = gpt(size, heads, hidden, layers, 51200, 2048, tied=True)
        for recompute, seconds in (("full", full), ("selective", present)):
            layout = Layout(gpus=gpus, tp=tp, pp=pp, vpp=interleave(layers, pp), micro_batch=mb, global_batch=batch,
                            sp=recompute == "selective", recompute=recompute, flash_attention=False)
            what = "full recompute" if recompute == "full" else "SP + selective"
            rows.append(PublishedRow(KORTHIKANTI_SOURCE, f"{size} on {gpus} A100, {what}", shape, layout, "a100-80gb",
                                     None, "megatron2024", seconds, interleave_assumed=layout.vpp > 1, cite=cite,
                                     assumed=assumed))
    shape = gpt("530B", 128, 20480, 105, 51200, 2048, tied=True)
    for recompute, mfu in KORTHIKANTI_2240:
        layout = Layout(gpus=2240, tp=8, pp=35, vpp=interleave(105, 35), micro_batch=1, global_batch=2240,
                        sp=recompute == "selective", recompute=recompute, flash_attention=False)
        what = "full recompute" if recompute == "full" else "SP + selective"
        rows.append(PublishedRow(KORTHIKANTI_SOURCE, f"530B on 2240 A100, {what}", shape, layout, "a100-80gb", None,
                                 "megatron2024", mfu=mfu, interleave_assumed=True, cite="arXiv 2205.05198, abstract",
                                 assumed="global batch 2240 (280 per replica, as Table 3's 530B); " + assumed))
    return rows


def llama3_rows() -> list[PublishedRow]:
    rows = []
    for gpus, tp, cp, pp, dp, seq, per_dp, tflops in LLAMA3:
        layout = _mcore_h100(gpus, tp, pp, 8, dp * per_dp, cp=cp, seq_length=seq, embedding_slots=True, shard="grads",
                             recompute="none" if seq == 8192 else "selective")
        rows.append(PublishedRow(LLAMA3_SOURCE, f"405B on {gpus} H100, cp {cp}, seq {seq // 1024}K",
                                 llama3_405b(seq), layout, "h100", tflops, "megatron2024",
                                 cite="arXiv 2407.21783, Table 4 and sec. 3.3.2",
                                 assumed=LLAMA3_ASSUMED + "; stated, as planned: " + LLAMA3_STATED))
    return rows


def nemotron_rows() -> list[PublishedRow]:
    rows = []
    for gpus, batch, seconds, mfu in NEMOTRON:
        layout = _mcore_h100(gpus, 8, 12, interleave(96, 12), batch)
        rows.append(PublishedRow(NEMOTRON_SOURCE, f"340B on {gpus} H100", nemotron4_340b(), layout, "h100", None,
                                 "megatron2024", seconds, interleave_assumed=True, mfu=mfu,
                                 cite="arXiv 2406.11704, Table 2",
                                 assumed="micro-batch 1; vpp the smallest interleaving; Megatron-Core settings as the "
                                         "H100 weak-scaling rows (no recompute, overlapped communication)"))
    return rows


def opt_rows() -> list[PublishedRow]:
    shape = replace(gpt("175B", 96, 12288, 96, 50272, 2048, tied=True), activation="relu", name="opt-175b")
    layout = Layout(gpus=992, tp=8, pp=1, micro_batch=8, global_batch=992, sp=False, recompute="full", shard="full",
                    overlap_grad_reduce=True, flash_attention=False, precision="fp16")
    return [PublishedRow(OPT_SOURCE, "175B on 992 A100 (FSDP)", shape, layout, "a100-80gb", 147.0, "narayanan",
                         cite="arXiv 2205.01068 sec. 2.4; metaseq projects/OPT/chronicles/final_update.md",
                         assumed=OPT_ASSUMED)]


def bloom_rows() -> list[PublishedRow]:
    shape = gpt("176B", 112, 14336, 70, 250680, 2048, tied=True)
    slots = replace(shape, num_layers=72, lm_head=False, name="bloom-176b (72 layer slots)")
    layout = Layout(gpus=384, tp=4, pp=12, micro_batch=2, global_batch=2048, sp=False, recompute="full",
                    distributed_optimizer=True, flash_attention=False, scatter_gather=False, network_gb_s=6.25,
                    pipeline_engine="deepspeed")
    return [PublishedRow(BLOOM_SOURCE, "176B on 384 A100", slots, layout, "a100-80gb", 150.0, "narayanan", 105.0,
                         flops_shape=shape,
                         cite="arXiv 2211.05100 sec. 3.4; bigscience.notion.site BigScience-176B-Model; "
                              "github.com/bigscience-workshop/bigscience train/tr11-176B-ml README.md and .slurm",
                         assumed="DeepSpeed's pipeline (full activations sent, plain 1F1B); TFLOP/s "
                                 "counted as Megatron-DeepSpeed's eq. 3 (recompute included); ALiBi planned as "
                                 "learned positions; 70 layers on 12 stages split as Megatron-DeepSpeed's "
                                 "'type:transformer|embedding' partition (the embedding and the tied output layer "
                                 "each take a layer's place), planned as 72 equal layer slots, FLOPs counted on the "
                                 "real 70-layer model")]
