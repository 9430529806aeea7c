"""The one place that decides device and backend: CUDA gives nccl, anything else gloo."""

from __future__ import annotations

import functools
import os

import torch


def pick_device(local_rank: int | None = None) -> torch.device:
    """The device this rank computes on: its GPU when CUDA is present, else the CPU."""
    if torch.cuda.is_available():
        if local_rank is None:
            local_rank = int(os.environ.get("LOCAL_RANK", 0))
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device("cpu")


def pick_backend() -> str:
    """nccl on CUDA, gloo otherwise (every collective the core needs runs on gloo)."""
    return "nccl" if torch.cuda.is_available() else "gloo"


def synchronize(device: torch.device) -> None:
    """Wait for queued work on `device` (a no-op on the CPU); used around timers."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return "cpu"


CPU_FLAGS = ("avx512_bf16", "amx_bf16", "amx_tile", "bf16")  # the bf16 facts: x86 flags and Arm's Features word


@functools.lru_cache(maxsize=1)  # a fact of the machine: /proc/cpuinfo is read once
def cpu_facts() -> tuple[str, frozenset[str]]:
    """(the CPU's model name, which of CPU_FLAGS it has), from /proc/cpuinfo where there is one."""
    import platform

    model, words = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                head, _, rest = line.partition(":")
                head = head.strip().lower()
                if head in ("model name", "hardware", "cpu part") and not model:
                    model = rest.strip()
                elif head in ("flags", "features"):
                    words.update(rest.split())
    except OSError:
        pass
    return model or platform.processor() or platform.machine() or "unknown CPU", frozenset(words & set(CPU_FLAGS))


def cpu_has_native_bf16() -> bool:
    """True when the CPU multiplies bf16 in hardware (AVX512-BF16 or AMX): bf16 GEMMs then run
    several times faster than fp32 ones; without it they are emulated and slower than fp32."""
    flags = cpu_facts()[1]
    return "avx512_bf16" in flags or "amx_bf16" in flags


FP32_EXPLICIT_MIN_QUERIES = 256  # CPU fp32, causal: the explicit kernel from this many queries ...
FP32_EXPLICIT_MAX_KEYS = 1024  # ... up to this many keys


def attention_kernel(device: torch.device, dtype: torch.dtype, queries: int = 0, keys: int = 0,
                     causal: bool = False, backward: bool = True) -> str:
    """The core-attention kernel for the fast path (megazoo.core.nn.fast_attention): "sdpa" or
    "explicit", for `queries` x `keys` scores. Measured per device (forward + backward, 2
    threads; the numbers in bench/RESULTS.md and the fast_attention docstring):
      - CUDA: SDPA (flash).
      - CPU, bf16 with native bf16: the explicit GEMM kernel (bench shapes 44 ms against SDPA's 78;
        it also won at seq 1024 and 2048 and in decoding).
      - CPU, fp32, causal: the explicit kernel (queries in blocks) from 256 queries up to 1024 keys
        (seq 256: 5.9 against 7.5 ms, 512: 63 against 81 ms, 1024: even); SDPA for longer rows
        (seq 2048: 361 against 247 ms, its scores no longer stay in cache), for fewer queries
        (decoding one token: 40 against 17 us a layer) and without the causal mask (no blocks to
        skip: 115-143 against 82-89 ms at seq 512). Forward only (`backward` False: a prefill, an
        evaluation) SDPA throughout: SmolLM2's shapes, batch 1 and 4, seq 256-1000, 1 and 2 threads,
        SDPA took 0.7-1.0x the explicit kernel's time except at seq 512 batch 1 (1.0-1.3x), and it
        allocates no score matrix (a 1,000-token prefill faulted in up to 300k fresh pages a call
        with the explicit kernel).
      - CPU bf16 without native bf16: SDPA.
    MEGAZOO_ATTENTION=sdpa or explicit overrides the rule (tests, measurements)."""
    forced = os.environ.get("MEGAZOO_ATTENTION", "auto")
    if forced in ("sdpa", "explicit"):
        return forced
    if device.type != "cpu":
        return "sdpa"
    if dtype == torch.bfloat16:
        return "explicit" if cpu_has_native_bf16() else "sdpa"
    fp32_wins = (dtype == torch.float32 and causal and backward and queries >= FP32_EXPLICIT_MIN_QUERIES
                 and keys <= FP32_EXPLICIT_MAX_KEYS)
    return "explicit" if fp32_wins else "sdpa"


def decode_products(device: torch.device, dtype: torch.dtype) -> str:
    """How decoding's products of 1-4 tokens run (megazoo.core.nn.decode_linear): "tuned" (weights
    packed by oneDNN for a few rows) or "plain" (F.linear as in training). Measured on a CPU (1
    thread, SmolLM2-135M shapes, weights not in cache), all products of a decode step: fp32 18.6 ms
    packed against 25.5 ms before (a cached input-major copy for one token, W x^T for 2-4) and
    34-36 ms through F.linear; bf16 10.6-11.8 ms packed against 20 ms. GPUs stay plain (not
    measured). MEGAZOO_DECODE_PRODUCTS=plain or tuned overrides the rule."""
    forced = os.environ.get("MEGAZOO_DECODE_PRODUCTS", "auto")
    if forced in ("plain", "tuned"):
        return forced
    return "tuned" if device.type == "cpu" and dtype in (torch.float32, torch.bfloat16) else "plain"


# glibc mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4


def set_allocator_policy(policy: str, device: torch.device) -> str:
    """Apply train.allocator to this process and say what it did (for the run's log).

    "keep" on a CPU: glibc serves every allocation from its heap (no per-tensor mmap) and never
    trims it, so the big tensors of a step (logits, their gradient, embedding gradients) reuse
    memory the previous step freed instead of mapping fresh pages (which fault once per 4 KiB:
    380-690k faults a step on the bench model). The cost: the process keeps its peak heap mapped
    (its resident size stays at the step's peak) rather than returning it between steps. CUDA
    has its own caching allocator, and other C libraries are left alone: "system" there."""
    if policy != "keep" or device.type != "cpu":
        return "system"
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        ok = libc.mallopt(_M_MMAP_MAX, 0) == 1 and libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1) == 1
    except (OSError, AttributeError):  # not glibc
        return "system"
    return "keep (glibc: mmap off, trim threshold 2 GiB)" if ok else "system"
