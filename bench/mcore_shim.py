"""Megatron-Core's GPTModel on a CPU, for bench/bench_train.py only (megazoo never imports Megatron).

Megatron-Core 0.16.1 (a benchmark asset, requirements-assets.txt) is written for CUDA. Its GPT model
with the local layer spec trains on a CPU over gloo with two patches, both to Megatron's module-level
state in this process only (the bench's contender process, or each of its ranks), none to its files
and none to torch; `build()` makes them after `parallel_state.initialize_model_parallel`:

1. The RNG tracker (`tensor_parallel.random._CUDA_RNG_STATE_TRACKER`). Its `add` and `fork` read and
   write CUDA generator states (`torch.cuda.get_rng_state`, `_get_cuda_rng_state`,
   `_set_cuda_rng_state`), which a CPU build of torch refuses, and Megatron's
   `model_parallel_cuda_manual_seed` adds the data-parallel, tensor-parallel and expert seeds to it.
   `CpuRNGStatesTracker` keeps the same named states as states of torch's CPU generator and `fork`
   swaps them in and out. Installed as Megatron's tracker (marked initialised, so
   `initialize_rng_tracker` keeps it) before Megatron's own `model_parallel_cuda_manual_seed` runs.
   The forward forks it around the embedding and attention dropouts (p=0 here).
2. The global memory buffer (`parallel_state._GLOBAL_MEMORY_BUFFER`): `DotProductAttention` computes
   the attention scores with `baddbmm` into a buffer from it, and Megatron's `GlobalMemoryBuffer`
   allocates on `torch.cuda.current_device()`. `CpuMemoryBuffer` hands out the same named, reused
   buffers on the CPU. (Traced: in the fp32, bf16 and TP=2 steps this is Megatron's only call of
   `torch.cuda.current_device`.)

Used as they are, no patch needed: `parallel_state.initialize_model_parallel` (with the default
process group on gloo its groups are gloo groups; CUDA only for SHARP, off; its extra gloo groups are
not made, they would duplicate these), `Float16Module` (bf16), the TP layers with
`use_cpu_initialization=True` (weights made whole on the CPU and split, so TP=1 and TP=2 start from the
same model), the vocab-parallel cross-entropy.

Avoided rather than patched (each would need torch itself patched):
- The default causal mask (`transformer.utils.get_default_causal_mask` builds it on device "cuda"):
  `Step` passes the causal mask itself, as Megatron's GPT datasets do (True = masked).
- Megatron's optimizers (`get_megatron_optimizer`: Float16OptimizerWithFloat16Params, FP32Optimizer)
  and `clip_grad_norm_fp32`: they create tensors with the literal `device='cuda'` (found_inf, the
  overflow buffer, the norm) and accept only parameters whose `type()` is 'torch.cuda.FloatTensor' or
  'torch.cuda.BFloat16Tensor'. `Step` uses torch's AdamW: in fp32 on the model's parameters; in bf16
  on fp32 main copies of the bf16 parameters, the bf16 gradients cast into fp32 main gradients, as
  Megatron's Float16Optimizer does. The gradient norm follows Megatron's rule (a tensor-parallel
  shard counts on every rank, a duplicated parameter, such as a norm or a row-parallel bias, on
  tensor-parallel rank 0 only; the squares summed over the tensor-parallel group).
- Megatron's DistributedDataParallel: the data-parallel size is 1, nothing to reduce.
- Fusions (bias-GELU, masked softmax, bias-dropout-add, gradient-accumulation, cross-entropy): all
  off, Megatron's defaults; they need CUDA kernels, Apex or Transformer Engine.
"""

from __future__ import annotations

import contextlib
import warnings
from functools import partial

import torch
import torch.nn.functional as F


class CpuRNGStatesTracker:
    """Megatron's RNG tracker interface (reset, is_initialized, get_states, set_states, add, fork)
    over torch's CPU generator: each named state is a CPU generator state."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.states_, self.seeds_ = {}, set()
        self._is_initialized = False

    def is_initialized(self):
        return self._is_initialized

    def get_states(self):
        return dict(self.states_)

    def set_states(self, states):
        self._is_initialized = True
        self.states_ = states

    def add(self, name, seed):
        self._is_initialized = True
        if seed in self.seeds_ or name in self.states_:
            raise ValueError(f"RNG state {name!r} or seed {seed} already added")
        self.seeds_.add(seed)
        saved = torch.get_rng_state()
        torch.manual_seed(seed)
        self.states_[name] = torch.get_rng_state()
        torch.set_rng_state(saved)

    @contextlib.contextmanager
    def fork(self, name=None):
        from megatron.core.tensor_parallel import random as mrandom

        name = name or mrandom._MODEL_PARALLEL_RNG_TRACKER_NAME
        saved = torch.get_rng_state()
        torch.set_rng_state(self.states_[name])
        try:
            yield
        finally:
            self.states_[name] = torch.get_rng_state()
            torch.set_rng_state(saved)


class CpuMemoryBuffer:
    """Megatron's GlobalMemoryBuffer on the CPU: one reused flat buffer per (name, dtype), grown
    when a larger view is asked for."""

    def __init__(self):
        self.buffer = {}

    def get_tensor(self, tensor_shape, dtype, name, mem_alloc_context=None):
        n = 1
        for d in tensor_shape:
            n *= d
        key = (name, dtype)
        if key not in self.buffer or self.buffer[key].numel() < n:
            self.buffer[key] = torch.empty(n, dtype=dtype)
        return self.buffer[key][:n].view(*tensor_shape)


def _megatron():
    with warnings.catch_warnings():  # "Apex / Transformer Engine not installed, falling back to torch"
        warnings.simplefilter("ignore")
        from megatron.core import parallel_state, tensor_parallel
        from megatron.core.models.gpt import GPTModel
        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
        from megatron.core.tensor_parallel import random as mrandom
        from megatron.core.transformer.module import Float16Module
        from megatron.core.transformer.transformer_config import TransformerConfig
    return parallel_state, tensor_parallel, mrandom, GPTModel, get_gpt_layer_local_spec, Float16Module, TransformerConfig


def build(sizes: dict, dtype: str, tp: int, seed: int = 1234):
    """Megatron-Core's GPTModel with the local layer spec at `sizes` (num_layers, hidden_size,
    num_heads, vocab_size, seq_length): tied embeddings, learned absolute positions, biases, 4h MLP,
    GELU with the tanh approximation (as megazoo's GPT), no dropout; bf16 as Megatron trains it
    (Float16Module). On `tp` tensor-parallel ranks of the initialised gloo process group; without
    one (TP=1 in a plain process) a one-rank gloo group is made here."""
    import torch.distributed as dist

    parallel_state, tensor_parallel, mrandom, GPTModel, local_spec, Float16Module, TransformerConfig = _megatron()
    if not dist.is_initialized():
        from megazoo.core.parallel.launch import free_port

        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp, create_gloo_process_groups=False)
    parallel_state._GLOBAL_MEMORY_BUFFER = CpuMemoryBuffer()  # patch 2
    mrandom._CUDA_RNG_STATE_TRACKER = CpuRNGStatesTracker()  # patch 1
    mrandom._CUDA_RNG_STATE_TRACKER_INITIALIZED = True
    torch.manual_seed(seed)
    tensor_parallel.model_parallel_cuda_manual_seed(seed)
    bf16 = dtype == "bf16"
    config = TransformerConfig(
        num_layers=sizes["num_layers"], hidden_size=sizes["hidden_size"], num_attention_heads=sizes["num_heads"],
        ffn_hidden_size=4 * sizes["hidden_size"], hidden_dropout=0.0, attention_dropout=0.0,
        activation_func=partial(F.gelu, approximate="tanh"), layernorm_epsilon=1e-5, init_method_std=0.02,
        tensor_model_parallel_size=tp, use_cpu_initialization=True, bf16=bf16,
        params_dtype=torch.bfloat16 if bf16 else torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GPTModel(config, local_spec(), vocab_size=sizes["vocab_size"], max_sequence_length=sizes["seq_length"],
                         share_embeddings_and_output_weights=True, position_embedding_type="learned_absolute")
    if bf16:  # the whole model (norms too) in bf16, the loss out in fp32
        model = Float16Module(config, model)
    model.train()
    return model


def close() -> None:
    """Megatron's own teardown of its parallel state (the process group stays, its owner ends it)."""
    parallel_state = _megatron()[0]
    parallel_state.destroy_model_parallel()


class Step:
    """One training step of a model from build(): forward with labels (Megatron's vocab-parallel
    cross-entropy, per-token losses, their mean), backward, the gradient norm over the
    tensor-parallel group and clipping to 1.0, torch AdamW (lr 3e-4, weight decay 0.1, as the bench's
    other contenders); in bf16 on fp32 main parameters and gradients (the module docstring)."""

    def __init__(self, model, ids: torch.Tensor, bf16: bool):
        parallel_state = _megatron()[0]
        self.model, self.ids, self.bf16 = model, ids, bf16
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.main = [p.detach().float().requires_grad_() for p in self.params] if bf16 else self.params
        self.opt = torch.optim.AdamW(self.main, lr=3e-4, weight_decay=0.1)
        self.tp_group = parallel_state.get_tensor_model_parallel_group()
        self.tp = parallel_state.get_tensor_model_parallel_world_size()
        rank0 = parallel_state.get_tensor_model_parallel_rank() == 0
        self.counted = [getattr(p, "tensor_model_parallel", False) or rank0 for p in self.params]
        s = ids.shape[1]
        self.position_ids = torch.arange(s).unsqueeze(0).expand_as(ids)
        self.mask = torch.ones(1, 1, s, s, dtype=torch.bool).triu(1)  # True: masked (Megatron's convention)

    def grad_norm(self) -> torch.Tensor:
        grads = [m.grad for m, counted in zip(self.main, self.counted) if counted and m.grad is not None]
        sq = torch.stack(torch._foreach_norm(grads)).square().sum()
        if self.tp > 1:
            torch.distributed.all_reduce(sq, group=self.tp_group)
        return sq.sqrt()

    def __call__(self) -> float:
        loss = self.model(self.ids, self.position_ids, self.mask, labels=self.ids).mean()
        loss.backward()
        if self.bf16:
            for p, m in zip(self.params, self.main):
                m.grad = p.grad.float()
                p.grad = None
        clip = torch.clamp(1.0 / (self.grad_norm() + 1e-6), max=1.0)
        torch._foreach_mul_([m.grad for m in self.main], clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        if self.bf16:
            with torch.no_grad():
                torch._foreach_copy_(self.params, self.main)  # the updated fp32 main params into the bf16 model
        return loss.item()
