"""The GPU table: public spec-sheet figures, dense (no sparsity) bf16 peak, per-GPU bandwidths.

`matmul_tflops` is the sustained rate of a large bf16 GEMM as measured by public benchmarks
(stas00/ml-engineering, "Maximum Achievable Matmul FLOPS": A100 SXM 267.9; H100/H200 SXM 792-794
as a short burst and about 700 sustained at the 700 W power limit; B200 about 1430 sustained).
V100 has no published measurement there: 85% of its peak is assumed, as A100 reaches.

NVLink is given per direction per GPU; the network is the per-GPU share of the node's inter-node
adapters (DGX A100: 8 x 200 Gb/s HDR InfiniBand; DGX H100/H200/B200: 8 x 400 Gb/s NDR).
"""

from __future__ import annotations

from megazoo.core.plan.shapes import GPU, Efficiency, PlanError

GPUS: dict[str, GPU] = {
    g.name: g
    for g in (
        GPU("v100", 125.0, 106.0, 32.0, 900.0, 150.0, 12.5,
            note="V100 SXM2 32GB; no bf16, the fp16 tensor-core peak is used"),
        GPU("a100-40gb", 312.0, 268.0, 40.0, 1555.0, 300.0, 25.0, note="A100 SXM4 40GB"),
        GPU("a100-80gb", 312.0, 268.0, 80.0, 2039.0, 300.0, 25.0, note="A100 SXM4 80GB (Selene)"),
        GPU("h100", 989.0, 700.0, 80.0, 3350.0, 450.0, 50.0, note="H100 SXM5 80GB"),
        GPU("h200", 989.0, 700.0, 141.0, 4800.0, 450.0, 50.0, note="H200 SXM 141GB"),
        GPU("b200", 2250.0, 1430.0, 180.0, 8000.0, 900.0, 50.0, note="B200 (DGX B200: 180 GB usable per GPU)"),
    )
}

ALIASES = {"a100": "a100-80gb", "a100-80": "a100-80gb", "a100-40": "a100-40gb", "h100-80gb": "h100",
           "h100-sxm": "h100", "v100-32gb": "v100"}

DEFAULT_EFFICIENCY = Efficiency()


def get_gpu(name: str | GPU) -> GPU:
    """Look a GPU up by name (case-insensitive); an unknown name lists the known ones."""
    if isinstance(name, GPU):
        return name
    key = str(name).strip().lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key not in GPUS:
        raise PlanError(f"unknown GPU {name!r}; known GPUs: {', '.join(GPUS)}")
    return GPUS[key]
