"""Peak FLOP/s for MFU: measured dense GEMM rate on a CPU, a table of spec-sheet peaks on GPUs.

On a CPU the peak is the rate of a large square matmul in the run's dtype, measured at start-up on
the same machine with the threads the whole run uses, so MFU compares like with like. On a GPU the
dense (no sparsity) spec-sheet peak of core/plan/hardware.py's table is used, and measured when the
GPU is not listed.
"""

from __future__ import annotations

import math
import os
import time

import torch

from megazoo.core.plan.hardware import gpu_for_device, peak_tflops

_CACHE: dict = {}  # (device, dtype, threads) -> FLOP/s, measured once per process


def gemm_flops(dtype: torch.dtype, device: torch.device | str = "cpu", threads: int | None = None,
               size: int = 1024, seconds: float = 0.4) -> float:
    """Measured FLOP/s of an n x n x n matmul in `dtype` (best of repeated timed batches)."""
    device = torch.device(device)
    key = (str(device), dtype, threads, size)
    if key in _CACHE:
        return _CACHE[key]
    old = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        a = torch.randn(size, size, device=device).to(dtype)
        b = torch.randn(size, size, device=device).to(dtype)
        for _ in range(2):
            torch.matmul(a, b)
        best, spent, reps = 0.0, 0.0, 1
        while spent < seconds:
            _sync(device)
            t = time.perf_counter()
            for _ in range(reps):
                torch.matmul(a, b)
            _sync(device)
            dt = time.perf_counter() - t
            spent += dt
            best = max(best, 2.0 * size**3 * reps / dt)
            reps = min(reps * 2, 64)
    finally:
        torch.set_num_threads(old)
    _CACHE[key] = best
    return best


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def dtype_name(dtype: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]


def peak_flops(dtype: torch.dtype, device: torch.device, world_size: int = 1) -> tuple[float, str]:
    """(peak FLOP/s of the hardware the whole run uses, how it was obtained).

    MEGAZOO_PEAK_TFLOPS overrides (useful to compare runs on a known machine)."""
    env = os.environ.get("MEGAZOO_PEAK_TFLOPS")
    if env:
        return float(env) * 1e12, "MEGAZOO_PEAK_TFLOPS"
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        # the planner's GPU table, matched by name and memory (an H100 PCIe is not an SXM board)
        gpu = gpu_for_device(name, torch.cuda.get_device_properties(device).total_memory / 2**30)
        if gpu is not None:
            return peak_tflops(gpu, dtype_name(dtype)) * 1e12 * world_size, f"spec sheet ({name})"
        return gemm_flops(dtype, device, size=8192) * world_size, f"measured GEMM ({name})"
    # CPU: the ranks share one machine; measure with all the threads the run uses
    threads = max(1, min(cpu_count(), torch.get_num_threads() * world_size))
    return gemm_flops(dtype, "cpu", threads), f"measured {dtype_name(dtype)} GEMM, {threads} CPU threads"


def capped_mfu(achieved: float, peak: float, source: str = "") -> tuple[float, str | None]:
    """(model FLOPs utilisation in [0, 1], or NaN; why it is not the plain ratio, or None).

    MFU above 100% means the peak is wrong, not the run fast: a measured peak can come out low (a
    busy machine, fewer threads than the run uses) and a device may be missing from the table. The
    value is then capped at 1 (unknown peak: NaN) and the reason says how to give the real peak."""
    fix = "set MEGAZOO_PEAK_TFLOPS to the device's dense peak for a true MFU"
    if not (math.isfinite(peak) and peak > 0):
        return float("nan"), f"MFU unknown: no peak FLOP/s for this device ({source or 'none'}); {fix}"
    if achieved > peak:
        return 1.0, (f"MFU capped at 100%: the run reached {achieved / 1e12:.3f} TFLOP/s, above the peak of "
                     f"{peak / 1e12:.3f} TFLOP/s ({source or 'given'}), so that peak is too low; {fix}")
    return achieved / peak, None


def percent(mfu: float) -> str:
    """MFU as printed: `41.2%`, or `n/a` when the peak is unknown."""
    return f"{100 * mfu:.1f}%" if math.isfinite(mfu) else "n/a"


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
