"""The planner's inputs: a model's shape and a parallel layout, as plain dataclasses.

core knows no model: the zoo converts a model card into a `ModelShape`; anything else (a test, a
paper's table row) can build one directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from megazoo.core.plan.traits import ArchTraits, UnknownArchitecture, arch_traits

ACTIVATIONS = ("gelu", "gelu_exact", "swiglu", "geglu", "relu")
# Megatron-Core's --recompute-modules the planner counts (with recompute "selective"): core_attn, the
# attention core (checkpointed); layernorm, the two norms' outputs (output-discarding); moe_act, the
# experts' activation function's output (output-discarding)
RECOMPUTE_MODULES = ("core_attn", "layernorm", "moe_act")


class PlanError(ValueError):
    """A model/layout/GPU combination the planner cannot evaluate, with what to change."""


@dataclass(frozen=True)
class ModelShape:
    """Sizes of a transformer, enough to count its parameters, FLOPs and activations."""

    num_layers: int
    hidden_size: int
    num_heads: int
    ffn_hidden_size: int
    vocab_size: int
    seq_length: int
    num_kv_heads: int | None = None  # None: as many as num_heads (plain multi-head attention)
    kv_channels: int | None = None  # per-head size; None: hidden_size // num_heads
    activation: str = "gelu"
    tie_embeddings: bool = True
    arch: str = "gpt"  # a registered architecture; its traits (core/plan/traits.py) say what kind of model it is
    position: str = "learned"  # learned | rope | relative
    norm: str = "layernorm"  # layernorm | rmsnorm
    bias: bool = True
    num_decoder_layers: int = 0  # t5 only
    dropout: bool = True  # dropout masks are stored as activations when on
    name: str = ""
    # Further facts a model builder states so that core/plan counts its parameters and FLOPs
    # exactly (zoo builders' shape()); the defaults are what a model card describes.
    vocab_multiple: int = 128  # the vocabulary is padded to a multiple of vocab_multiple * tp
    adapter_size: int = 0  # two bottleneck adapters (h -> r -> h, with biases) per layer; 0: none
    decoder_seq_length: int | None = None  # t5: target tokens per sample; None: seq_length
    relative_buckets: int = 32  # t5: relative-position buckets per head, in each stack
    num_tokentypes: int = 2  # bert: token-type (segment) embeddings
    embedding_norm: bool | None = None  # a norm after the embeddings; None: bert has one
    final_norm: bool = True  # a norm after the last layer (pre-norm layouts)
    lm_head: bool = True  # the output projection onto the vocabulary (bert: with its dense + norm + bias)
    pooler: bool = True  # bert: tanh dense on the first token
    binary_head: bool = True  # bert: the 2-way sentence-order head
    task_outputs: int = 0  # a fine-tuning head: one replicated dense layer to this many outputs
    # Mixture of experts (core/nn/config.py MoEConfig): num_experts 0 is a dense model. An MoE layer
    # (every `moe_every`-th: layers every-1, 2*every-1, ...) has a router (num_experts x h, no bias)
    # and num_experts expert MLPs of moe_ffn_hidden_size (None: ffn_hidden_size) in place of its MLP;
    # each token runs top_k of them. capacity_factor None is dropless.
    num_experts: int = 0
    top_k: int = 1
    moe_every: int = 1
    moe_ffn_hidden_size: int | None = None
    capacity_factor: float | None = None

    @property
    def moe(self) -> bool:
        return self.num_experts > 0

    @property
    def expert_ffn(self) -> int:
        """An expert MLP's hidden size."""
        return self.moe_ffn_hidden_size or self.ffn_hidden_size

    def is_moe_layer(self, layer: int) -> bool:
        """Whether layer `layer` (0-based, global) has experts (MoEConfig.is_moe_layer)."""
        return self.moe and (layer + 1) % self.moe_every == 0

    @property
    def num_moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.num_layers))

    @property
    def routed_share(self) -> float:
        """Expert-MLP token passes per token of an MoE layer: top_k, capped by the capacity factor
        (balanced routing assumed: a capacity factor >= 1 then drops nothing)."""
        return self.top_k * min(1.0, self.capacity_factor or 1.0)

    @property
    def kv_heads(self) -> int:
        return self.num_kv_heads or self.num_heads

    @property
    def head_dim(self) -> int:
        return self.kv_channels or self.hidden_size // self.num_heads

    @property
    def q_size(self) -> int:
        """Width of the query projection (kv_channels * heads)."""
        return self.head_dim * self.num_heads

    @property
    def kv_size(self) -> int:
        """Width of one of the key/value projections (kv_channels * kv groups)."""
        return self.head_dim * self.kv_heads

    @property
    def gated(self) -> bool:
        """Gated MLPs (SwiGLU, GEGLU) have a gate and an up projection: three weight matrices."""
        return self.activation in ("swiglu", "geglu")

    @property
    def traits(self) -> ArchTraits:
        """What kind of model `arch` is (UnknownArchitecture, a ValueError, for an unknown name)."""
        return arch_traits(self.arch)

    @property
    def causal(self) -> bool:
        return self.traits.causal

    @property
    def has_embedding_norm(self) -> bool:
        return self.traits.embedding_norm if self.embedding_norm is None else self.embedding_norm

    @property
    def decoder_seq(self) -> int:
        return self.decoder_seq_length or self.seq_length

    def validate(self) -> None:
        try:
            traits = self.traits
        except UnknownArchitecture as e:
            raise PlanError(str(e)) from None
        if self.activation not in ACTIVATIONS:
            raise PlanError(f"model activation {self.activation!r} is not one of {', '.join(ACTIVATIONS)}")
        for name in ("num_layers", "hidden_size", "num_heads", "ffn_hidden_size", "vocab_size", "seq_length"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise PlanError(f"model {name} must be a positive integer, got {value!r}")
        if self.kv_channels is None and self.hidden_size % self.num_heads:
            raise PlanError(f"hidden_size {self.hidden_size} is not divisible by num_heads {self.num_heads}; "
                            "set kv_channels or choose sizes that divide")
        if self.num_heads % self.kv_heads:
            raise PlanError(f"num_heads {self.num_heads} is not divisible by num_kv_heads {self.kv_heads}")
        if self.moe:
            if not traits.moe:
                raise PlanError(f"mixture of experts is planned for gpt and llama models, not {self.arch}")
            for name in ("top_k", "moe_every"):
                value = getattr(self, name)
                if not isinstance(value, int) or value < 1:
                    raise PlanError(f"model {name} must be a positive integer, got {value!r}")
            if self.top_k > self.num_experts:
                raise PlanError(f"top_k {self.top_k} is larger than num_experts {self.num_experts}; a token "
                                "cannot go to more experts than there are")
            if self.capacity_factor is not None and not self.capacity_factor > 0:
                raise PlanError(f"capacity_factor must be > 0 (or unset for dropless), got {self.capacity_factor!r}")
        elif self.num_experts < 0:
            raise PlanError(f"num_experts must be >= 0 (0: a dense model), got {self.num_experts!r}")


@dataclass(frozen=True)
class Layout:
    """How one training step is spread over GPUs. dp is derived: gpus = tp * cp * pp * dp (rank order
    tp, cp, dp, pp, as core/parallel/context.py); ep experts groups are carved out of dp."""

    gpus: int
    tp: int = 1
    pp: int = 1
    cp: int = 1  # context parallelism: each rank holds s / cp tokens (2 chunks of s / (2 cp)), ring attention
    ep: int = 1  # expert parallelism: each rank of an ep group holds num_experts / ep experts
    # Megatron-Core's MoE parallel folding (--expert-tensor-parallel-size): the expert layers' own
    # tensor-parallel size. Their etp x ep x expert-dp grid spans the tp x cp x dp ranks of a pipeline
    # stage (ep ranks etp apart; expert-dp = tp cp dp / (etp ep)), and each rank dispatches its own
    # sequence-parallel slice. None: megazoo's MoE layer (core/nn/moe): experts split over tp like the
    # dense MLP, the slices gathered over tp before routing, ep carved out of dp.
    etp: int | None = None
    cp_overlap: bool = True  # the ring's K/V sends run under the attention of the chunk in hand
    vpp: int = 1  # model chunks per pipeline rank (interleaved 1F1B when > 1)
    # the embedding and the output layer (with the loss) each take one layer's place in the pipeline
    # split: stage 0's first chunk and the last stage's last chunk hold one layer fewer (Llama 3, sec.
    # 3.3.2; Megatron-LM's --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split)
    embedding_slots: bool = False
    micro_batch: int = 1
    global_batch: int | None = None  # sequences per step; None: one micro-batch per replica
    seq_length: int | None = None  # None: the model's
    sp: bool | None = None  # sequence parallelism; None: on whenever tp > 1
    recompute: str = "none"  # none | selective | full
    # with recompute "selective", the modules recomputed in the backward (Megatron-Core's
    # --recompute-modules, RECOMPUTE_MODULES): () is its default, the attention core
    recompute_modules: tuple[str, ...] = ()
    distributed_optimizer: bool = False
    # what the data-parallel ranks shard (core/plan/zero.py): none | optimizer | grads | full (ZeRO-1/2/3);
    # None: optimizer with the distributed optimizer, else none
    shard: str | None = None
    shard_prefetch: bool = True  # ZeRO-3: the next unit's all-gather runs under the current unit's compute
    optimizer_offload: str | None = None  # "cpu": fp32 main weights and Adam on the host, stepped there
    precision: str = "bf16"
    gpus_per_node: int | None = None  # None: the GPU table's
    nvlink_gb_s: float | None = None  # per-direction NVLink bandwidth per GPU; None: the table's
    network_gb_s: float | None = None  # per-GPU inter-node bandwidth; None: the table's
    # software features of the training stack (facts about the run, not tuning knobs)
    flash_attention: bool = True  # fused attention: no s x s scores stored, causal half computed
    overlap_grad_reduce: bool = False
    bucket_size: int = 10_000_000  # elements per gradient bucket (megazoo's optim.bucket_size)
    overlap_param_gather: bool = False
    tp_comm_overlap: bool = False
    scatter_gather: bool = True  # pp sends 1/tp of the activation over the network (Narayanan 2021)
    pipeline_engine: str = "megatron"  # megatron | deepspeed: whose 1F1B runs the pipeline (timing.bubble_time)

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.cp * self.pp)

    @property
    def dp_cp(self) -> int:
        """Ranks a dense gradient is reduced over (the cp ranks see other tokens of the same samples)."""
        return self.dp * self.cp

    @property
    def folded(self) -> bool:
        """Megatron-Core's MoE parallel folding (etp given) rather than megazoo's MoE layer."""
        return self.etp is not None

    @property
    def expert_tp(self) -> int:
        """Ranks an expert's weights are split over: etp when folded, else tp."""
        return self.tp if self.etp is None else self.etp

    @property
    def expert_dp(self) -> int:
        """Ranks an expert's gradient is reduced over: tp * cp * dp / (expert_tp * ep), which is
        dp * cp / ep for megazoo's layer (expert_tp = tp)."""
        return self.tp * self.cp * self.dp // (self.expert_tp * self.ep)

    @property
    def sharding(self) -> str:
        """none | optimizer | grads | full: `shard`, else optimizer (ZeRO-1) with the distributed optimizer."""
        return self.shard or ("optimizer" if self.distributed_optimizer else "none")

    @property
    def sharded(self) -> bool:
        """Whether optimizer states (at least) are split over the data-parallel ranks."""
        return self.sharding != "none"

    def recomputed_modules(self, recompute: str | None = None) -> tuple[str, ...]:
        """The modules (RECOMPUTE_MODULES) the backward recomputes under `recompute` (default: this
        layout's): with selective recompute the listed ones, the attention core when none is listed."""
        if (recompute or self.recompute) != "selective":
            return ()
        return self.recompute_modules or ("core_attn",)

    def recomputes(self, module: str) -> bool:
        """Whether the backward recomputes `module` (recomputed_modules)."""
        return module in self.recomputed_modules()

    @property
    def sequence_parallel(self) -> bool:
        return self.tp > 1 if self.sp is None else bool(self.sp)

    @property
    def batch(self) -> int:
        return self.global_batch if self.global_batch is not None else self.dp * self.micro_batch

    @property
    def num_micro_batches(self) -> int:
        """Micro-batches per pipeline (per data-parallel replica) in one step."""
        return self.batch // (self.dp * self.micro_batch)



@dataclass(frozen=True)
class GPU:
    """One accelerator type: dense bf16 peak, memory and link bandwidths (per GPU, per direction)."""

    name: str
    peak_tflops: float
    matmul_tflops: float  # sustained large-GEMM bf16 throughput (measured, public benchmarks)
    memory_gib: float
    hbm_gb_s: float
    nvlink_gb_s: float
    network_gb_s: float
    gpus_per_node: int = 8
    note: str = ""
    fp32_tflops: float = 0.0  # dense FP32 (no tensor cores): the peak an fp32 run's MFU is taken against
    family: str = ""  # the model word in torch.cuda.get_device_name ("H100"); "": never matched to a device
    variant: str = ""  # the word that names a variant of the family ("PCIe", "NVL"); "": the SXM board


@dataclass(frozen=True)
class Efficiency:
    """The one global set of efficiency constants, shared by every GPU, model and layout. They are
    set against the whole validation table (core/plan/published.py; `megazoo plan --validate`);
    no row has constants of its own. gemm_fraction, gemm_dim_half and kernel_overhead_s are the
    fitted ones (core/plan/fit.py picks them from a grid; issue 44 refit them on 43 rows, from 0.85,
    96 and 6 us); tests/test_plan_validation.py refits them without each source in turn."""

    gemm_fraction: float = 0.85  # of the GPU's sustained matmul rate reached by a model's large GEMMs
    gemm_dim_half: float = 24.0  # a GEMM dimension d costs d/(d + this) (tile and wave quantisation)
    flash_fraction: float = 0.55  # fused attention kernels relative to a large GEMM
    kernel_overhead_s: float = 3e-6  # launch gap and tail per kernel, paid by small kernels most
    hbm_fraction: float = 0.80  # of HBM bandwidth reached by element-wise kernels
    link_fraction: float = 0.75  # of link bandwidth reached by collectives (NCCL bus bandwidth)
    overlap_exposed: float = 0.25  # share of an overlapped communication left on the critical path
    overhead_gib: float = 3.0  # CUDA context, NCCL buffers, workspaces, allocator fragmentation
    step_overhead_s: float = 0.0  # fixed per-step cost (data loading, logging)
    # structural rules switched off (core/plan/fit.py RULES names them and the source each came from):
    # the leave-one-source-out check of the rules plans a rule's source without it; empty in every plan
    rules_off: frozenset = frozenset()
