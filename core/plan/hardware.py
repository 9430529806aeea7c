"""The GPU table: public spec-sheet figures, dense (no sparsity) bf16 peak, per-GPU bandwidths.
It is the one table: the planner reads it, and the trainer's MFU takes its peak from it
(`gpu_for_device`, by the device's name and memory).

Peaks are NVIDIA's datasheets (dense = half the "with sparsity" figure): A100 (312 bf16, 19.5
fp32), H100 SXM 989 / H100 PCIe 756 / H100 NVL 835 (fp32 67 / 51 / 60; "NVIDIA H100 Tensor Core GPU"
datasheet), H200 989 / H200 NVL 835 (fp32 67 / 60;
"NVIDIA H200 Tensor Core GPU" datasheet), B200 2250 (fp32 80; "NVIDIA
DGX B200" datasheet, 4.5 PFLOPS sparse FP16/BF16 per GPU), A10 125 (fp32 31.2), L4 121 (fp32 30.3),
V100 SXM2 125 fp16 (fp32 15.7).

`matmul_tflops` is the sustained rate of a large bf16 GEMM as measured by public benchmarks
(stas00/ml-engineering, "Maximum Achievable Matmul FLOPS": A100 SXM 267.9; H100/H200 SXM 792-794
as a short burst and about 700 sustained at the 700 W power limit; B200 about 1430 sustained).
V100, H100 PCIe/NVL, H200 NVL, A10 and L4 have no published measurement there: 85% of their peak is
assumed, as A100 reaches.

NVLink is given per direction per GPU (PCIe cards without NVLink: the PCIe x16 link); the network
is the per-GPU share of the node's inter-node adapters (DGX A100: 8 x 200 Gb/s HDR InfiniBand; DGX
H100/H200/B200: 8 x 400 Gb/s NDR; PCIe servers: assumed as DGX H100, or 100 Gb/s for A10/L4).
"""

from __future__ import annotations

import re

from megazoo.core.plan.shapes import GPU, Efficiency, PlanError

GPUS: dict[str, GPU] = {
    g.name: g
    for g in (
        GPU("v100", 125.0, 106.0, 32.0, 900.0, 150.0, 12.5, fp32_tflops=15.7, family="V100",
            note="V100 SXM2 32GB; no bf16, the fp16 tensor-core peak is used"),
        GPU("a100-40gb", 312.0, 268.0, 40.0, 1555.0, 300.0, 25.0, fp32_tflops=19.5, family="A100",
            note="A100 SXM4 40GB"),
        GPU("a100-80gb", 312.0, 268.0, 80.0, 2039.0, 300.0, 25.0, fp32_tflops=19.5, family="A100",
            note="A100 SXM4 80GB (Selene)"),
        GPU("h100", 989.0, 700.0, 80.0, 3350.0, 450.0, 50.0, fp32_tflops=67.0, family="H100",
            note="H100 SXM5 80GB"),
        GPU("h200", 989.0, 700.0, 141.0, 4800.0, 450.0, 50.0, fp32_tflops=67.0, family="H200",
            note="H200 SXM 141GB"),
        GPU("b200", 2250.0, 1430.0, 180.0, 8000.0, 900.0, 50.0, fp32_tflops=80.0, family="B200",
            note="B200 (DGX B200: 180 GB usable per GPU)"),
        # the variants and smaller cards the trainer's MFU meets (planner figures as noted above)
        GPU("h100-pcie", 756.0, 643.0, 80.0, 2000.0, 300.0, 50.0, fp32_tflops=51.0, family="H100",
            variant="PCIe", note="H100 PCIe 80GB (NVLink bridge 600 GB/s)"),
        GPU("h100-nvl", 835.0, 710.0, 94.0, 3900.0, 300.0, 50.0, fp32_tflops=60.0, family="H100",
            variant="NVL", note="H100 NVL 94GB (NVLink bridge 600 GB/s)"),
        GPU("h200-nvl", 835.0, 710.0, 141.0, 4800.0, 450.0, 50.0, fp32_tflops=60.0, family="H200",
            variant="NVL", note="H200 NVL 141GB (NVLink bridge 900 GB/s)"),
        GPU("a10", 125.0, 106.0, 24.0, 600.0, 32.0, 12.5, fp32_tflops=31.2, family="A10",
            note="A10 24GB GDDR6, PCIe Gen4"),
        GPU("l4", 121.0, 103.0, 24.0, 300.0, 32.0, 12.5, fp32_tflops=30.3, family="L4",
            note="L4 24GB GDDR6, PCIe Gen4"),
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


def gpu_for_device(device_name: str, memory_gib: float) -> GPU | None:
    """The table's entry for a device as torch reports it ("NVIDIA H100 PCIe", "NVIDIA H100 80GB
    HBM3", "NVIDIA A100-SXM4-40GB") and its memory; None for a device the table does not know.

    Whole words, not substrings: "A10" is not an A100, an "H100 PCIe" is not an SXM board. The
    family word picks the candidates, a variant word ("PCIe", "NVL") the variant (none: the SXM
    board), and the memory the size (A100 40GB or 80GB)."""
    words = set(re.split(r"[^a-z0-9]+", device_name.lower()))
    family = [g for g in GPUS.values() if g.family and g.family.lower() in words]
    if not family:
        return None
    variant = [g for g in family if g.variant and g.variant.lower() in words]
    # no variant word: the SXM boards; a variant the table lacks (A100 PCIe): the family, same peaks
    pool = variant or [g for g in family if not g.variant] or family
    return min(pool, key=lambda g: abs(g.memory_gib - memory_gib))


def peak_tflops(gpu: GPU, dtype: str) -> float:
    """Dense peak TFLOP/s for a dtype name (bf16 | fp16 | fp32): fp16 runs at the bf16 rate."""
    return gpu.fp32_tflops if dtype == "fp32" else gpu.peak_tflops
