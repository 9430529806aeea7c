"""Whether bf16 GEMMs are faster than fp32 ones here, for `precision.dtype: auto` and for the one
warning line an explicit bf16 gets where it is slower.

    bf16_is_faster(device)            # True / False
    resolve_dtype("auto", device)     # ("fp32", "precision.dtype=auto picks fp32: bf16 GEMMs run 0.52x fp32 ...")
    resolve_dtype("bf16", device)     # ("bf16", the warning line) where bf16 is slower, else ("bf16", None)

How it is known, in this order:
  - MEGAZOO_BF16_PROBE (tests, a known machine): `faster`, `slower`, or the GEMM rates as the pair
    `FP32,BF16` in TFLOP/s (e.g. `0.325,0.168`); source "env". Any other value is refused in one line.
  - CUDA: the device's capability, not measured: bf16 from sm80 (Ampere) on; source "cuda".
  - A CPU with AMX (amx_bf16 and amx_tile): bf16 GEMMs run several times faster; source "features".
  - Any other CPU: a short measurement of both dtypes (core/train/flops.py gemm_flops, two matrix
    sizes taken in turn so that a burst of load hits both dtypes alike, ~2 s), kept in the user
    cache (core/fs/cache.py) under precision/, keyed by the CPU model, the flags that matter
    (avx512_bf16, amx_bf16, amx_tile, Arm's bf16), the torch version and the thread count; source
    "measured", then "cached". AVX512-BF16 alone is no promise: on an Emerald Rapids without AMX
    exposed bf16 GEMMs ran 0.52x fp32 (0.168 against 0.325 TFLOP/s), on an AMD EPYC (Zen) faster.
    Delete the folder to measure again.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass

import torch

from megazoo.core.fs import cache_root, write_json_atomic
from megazoo.core.parallel.device import cpu_facts
from megazoo.core.train import flops
from megazoo.core.train.errors import ConfigError

ENV = "MEGAZOO_BF16_PROBE"
PROBE_SIZES = (1024, 768)  # n of the n x n x n products, measured in turn
PROBE_SECONDS = 0.25  # per dtype and size
CACHE_VERSION = 1


@dataclass(frozen=True)
class ProbeResult:
    """What is known about bf16 against fp32 GEMMs on one device."""

    fp32_tflops: float  # NaN where not measured (CUDA, features, `faster`/`slower` injected)
    bf16_tflops: float
    source: str  # measured | cached | cuda | features | env
    basis: str  # what decided it, for the log line: "AMD EPYC, 2 threads", "sm90", "amx_bf16 + amx_tile", ...
    faster: bool  # bf16 GEMMs are faster than fp32 ones
    where: str = "this CPU"  # the device, in the log line's words

    @property
    def ratio(self) -> float:
        """bf16 over fp32 GEMM rate (NaN without figures)."""
        return self.bf16_tflops / self.fp32_tflops if self.has_figures else float("nan")

    @property
    def has_figures(self) -> bool:
        return math.isfinite(self.fp32_tflops) and math.isfinite(self.bf16_tflops) and self.fp32_tflops > 0

    def describe(self) -> str:
        """Why, in words: "bf16 GEMMs run 0.52x fp32 on this CPU (0.168 vs 0.325 TFLOP/s; measured: ...)"."""
        if self.source == "cuda":
            return f"CUDA {self.basis} " + ("has native bf16" if self.faster else "has no native bf16 (sm80 on)")
        if self.source == "features":
            return f"the CPU has {self.basis}" if self.faster else self.basis
        if self.has_figures:
            return (f"bf16 GEMMs run {self.ratio:.2f}x fp32 on {self.where} ({self.bf16_tflops:.3f} vs "
                    f"{self.fp32_tflops:.3f} TFLOP/s; {self.source}: {self.basis})")
        return (f"bf16 GEMMs run {'faster' if self.faster else 'slower'} than fp32 on {self.where} "
                f"({self.source}: {self.basis})")


def bf16_is_faster(device: torch.device | str = "cpu") -> bool:
    """Whether bf16 GEMMs beat fp32 ones on `device` (see the module's docstring for how it is known)."""
    return probe(device).faster


def resolve_dtype(name: str, device: torch.device | str = "cpu") -> tuple[str, str | None]:
    """(the dtype a run with precision.dtype=`name` computes in, a line for the log or None).

    `auto`: bf16 where its GEMMs are faster, else fp32, and the line says which and why (information).
    `bf16` where its GEMMs are slower: bf16 as asked, and the line is a warning saying by how much.
    Anything else: as given, with no line (nothing is probed)."""
    if name == "auto":
        result = probe(device)
        chosen = "bf16" if result.faster else "fp32"
        return chosen, f"precision.dtype=auto picks {chosen}: {result.describe()}"
    if name == "bf16" and torch.device(device).type in ("cpu", "cuda"):
        result = probe(device)
        if not result.faster:
            how = result.describe()
            return "bf16", f"precision.dtype=bf16: {how}; precision.dtype=auto picks fp32"
    return name, None


def settle(cfg, device: torch.device, rank: int = 0, world: int = 1) -> tuple[str | None, bool]:
    """Resolve cfg.precision.dtype in place before the model is built: `auto` becomes fp32 or bf16
    (rank 0 decides and, with more ranks, tells the others, so all compute in one dtype). Returns
    (the line rank 0 logs or None, whether it is a warning: an explicit bf16 slower here)."""
    name = cfg.precision.dtype
    if name not in ("auto", "bf16"):
        return None, False
    chosen, line = resolve_dtype(name, device) if rank == 0 else (name, None)
    if name == "auto" and world > 1:
        import torch.distributed as dist

        box = [chosen]
        dist.broadcast_object_list(box, src=0, device=device if device.type == "cuda" else None)
        chosen = box[0]
    cfg.precision.dtype = chosen
    return line, name == "bf16"


def probe(device: torch.device | str = "cpu") -> ProbeResult:
    """The bf16-against-fp32 facts of `device`: injected, from CUDA's capability, from the CPU's
    features, cached, or measured now (and cached)."""
    device = torch.device(device)
    injected = os.environ.get(ENV)
    if injected is not None and injected.strip():
        return from_env(injected, "this CPU" if device.type == "cpu" else f"this {device.type} device")
    nan = float("nan")
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        return ProbeResult(nan, nan, "cuda", f"sm{major}{minor}", major >= 8)
    if device.type != "cpu":
        return ProbeResult(nan, nan, "features", f"{device.type}: not probed, fp32 kept", False)
    model, flags = cpu_facts()
    if "amx_bf16" in flags and "amx_tile" in flags:
        return ProbeResult(nan, nan, "features", "AMX (amx_bf16 + amx_tile)", True)
    threads = torch.get_num_threads()
    key = {"version": CACHE_VERSION, "cpu": model, "flags": sorted(flags), "torch": torch.__version__,
           "threads": threads}
    basis = f"{model}, {threads} thread{'s' if threads != 1 else ''}"
    path = cache_root() / "precision" / (hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
                                         + ".json")
    cached = _read(path, key)
    if cached is not None:
        return ProbeResult(cached[0], cached[1], "cached", basis, cached[1] > cached[0])
    fp32, bf16 = measure(threads)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {"key": key, "fp32_tflops": fp32, "bf16_tflops": bf16,
                                 "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None})
    except OSError:  # an unwritable cache costs a measurement per run, not the run
        pass
    return ProbeResult(fp32, bf16, "measured", basis, bf16 > fp32)


def measure(threads: int) -> tuple[float, float]:
    """(fp32, bf16) GEMM TFLOP/s on this CPU with `threads` threads: the best of each dtype over
    PROBE_SIZES, the dtypes taken in turn (fp32 first at one size, bf16 first at the next)."""
    best = {torch.float32: 0.0, torch.bfloat16: 0.0}
    order = [torch.float32, torch.bfloat16]
    for size in PROBE_SIZES:
        for dtype in order:
            best[dtype] = max(best[dtype], flops.gemm_flops(dtype, "cpu", threads, size=size, seconds=PROBE_SECONDS))
        order.reverse()
    return best[torch.float32] / 1e12, best[torch.bfloat16] / 1e12


def check_injected() -> None:
    """Refuse a malformed MEGAZOO_BF16_PROBE in one line (config validation, before any rank starts)."""
    value = os.environ.get(ENV)
    if value is not None and value.strip():
        from_env(value)


def from_env(value: str, where: str = "this CPU") -> ProbeResult:
    """MEGAZOO_BF16_PROBE's value as a probe result; anything but faster, slower or FP32,BF16 is refused."""
    nan = float("nan")
    word = value.strip().lower()
    basis = f"{ENV}={value.strip()}"
    if word in ("faster", "slower"):
        return ProbeResult(nan, nan, "env", basis, word == "faster", where)
    try:
        fp32, bf16 = (float(x) for x in word.split(","))
    except ValueError:
        fp32 = bf16 = nan
    if not (math.isfinite(fp32) and math.isfinite(bf16) and fp32 > 0 and bf16 > 0):
        raise ConfigError(f"{ENV}={value!r}: expected faster, slower or the fp32,bf16 GEMM rates in TFLOP/s "
                          f"(e.g. 0.325,0.168); unset it to measure")
    return ProbeResult(fp32, bf16, "env", basis, bf16 > fp32, where)


def _read(path, key: dict) -> tuple[float, float] | None:
    """(fp32, bf16) TFLOP/s from a cache file made for `key`; None when missing or unreadable."""
    try:
        data = json.loads(path.read_text())
        if data.get("key") != key:
            return None
        fp32, bf16 = float(data["fp32_tflops"]), float(data["bf16_tflops"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return (fp32, bf16) if fp32 > 0 and bf16 > 0 else None
