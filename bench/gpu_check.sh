#!/usr/bin/env bash
# One-shot GPU check (issue 27), for a session that is lent a GPU; prepared and tested on CPU only
# (the CUDA branches have not run yet). About 5-8 minutes on one H100/H200:
#   1. the nccl path of the parity tests (needs >= 2 GPUs: NCCL refuses two ranks on one device;
#      with one GPU, a world-size-1 nccl group is checked instead and the multi-rank tests are skipped);
#   2. bf16 on CUDA: the attention rule picks SDPA, its flash kernel runs at the model's shapes and
#      matches fp32; a tiny GPT's bf16 forward/backward on the GPU matches the CPU in fp32;
#   3. the training benchmark of a 1.3B GPT (24 layers, hidden 2048, 16 heads, seq 2048, vocab
#      50304, bf16, micro-batch 8) on one GPU: tokens/s, TFLOP/s and MFU against the device's dense
#      bf16 spec-sheet peak (core/plan/hardware.py).
# Usage: bash bench/gpu_check.sh [output folder, default $OUT or /tmp/megazoo-gpu-check]
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python
DEST=${1:-${OUT:-/tmp/megazoo-gpu-check}}
mkdir -p "$DEST"
LOG="$DEST/gpu_check.log"
say() { echo "$*" | tee -a "$LOG"; }
: > "$LOG"
nvidia-smi -L 2>&1 | tee -a "$LOG" || { say "no nvidia-smi: not a GPU machine"; exit 1; }
GPUS=$("$PY" -c "import torch; print(torch.cuda.device_count())")
say "torch sees $GPUS GPU(s)"
[ "$GPUS" -ge 1 ] || { say "torch has no CUDA device"; exit 1; }

say "== 1. nccl parity"
if [ "$GPUS" -ge 2 ]; then
  for t in tests/test_parallel_collectives.py tests/test_parallel_tp_parity.py tests/test_fast_cross_entropy.py; do
    timeout 300 "$PY" -m pytest -q -p no:cacheprovider -x "$t" 2>&1 | tail -3 | tee -a "$LOG"
  done
else
  say "one GPU: multi-rank nccl tests skipped (NCCL needs one device per rank); world-size-1 nccl check:"
  timeout 120 "$PY" - <<'PY' 2>&1 | tee -a "$LOG"
import os, torch, torch.distributed as dist
from megazoo.core.parallel.device import pick_backend
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
dist.init_process_group(pick_backend(), rank=0, world_size=1)
x = torch.ones(4, device="cuda")
dist.all_reduce(x)
print("backend", dist.get_backend(), "all_reduce ok:", bool((x == 1).all()))
dist.destroy_process_group()
PY
fi

say "== 2. bf16 on CUDA: SDPA flash and the model"
timeout 300 "$PY" - <<'PY' 2>&1 | tee -a "$LOG"
import torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from megazoo.core.nn.fast_attention import fast_attention
from megazoo.core.parallel.device import attention_kernel
dev = torch.device("cuda")
print("attention kernel for bf16 on", torch.cuda.get_device_name(dev), "->", attention_kernel(dev, torch.bfloat16))
q, k, v = (torch.randn(4, 16, 2048, 128, device=dev) for _ in range(3))
ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
qb, kb, vb = (t.bfloat16().requires_grad_() for t in (q, k, v))
with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):  # raises if flash cannot run these inputs
    out = fast_attention(qb, kb, vb, 128 ** -0.5, True)
    out.float().sum().backward()
print("flash bf16 vs fp32: max abs error", (out.float() - ref).abs().max().item())
gq = torch.randn(2, 32, 512, 128, device=dev, dtype=torch.bfloat16)
gk, gv = (torch.randn(2, 8, 512, 128, device=dev, dtype=torch.bfloat16) for _ in range(2))
with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
    print("GQA bf16 runs:", tuple(fast_attention(gq, gk, gv, 128 ** -0.5, True).shape))

from megazoo.core.parallel.context import ParallelContext
from megazoo.zoo.gpt import TINY, GPTModel
cfg = TINY["llama-tiny"]()
ids = torch.randint(0, 300, (2, 32), generator=torch.Generator().manual_seed(0))
def run(device, dtype):  # the same CPU-initialised weights, moved
    m = GPTModel(cfg, ParallelContext.single(torch.device("cpu"))).initialize(1234).to(device=device, dtype=dtype)
    loss = m(ids.to(device), labels=ids.to(device)).float().mean()
    loss.backward()
    return loss.item()
cpu_loss = run("cpu", torch.float32)
gpu_loss = run("cuda", torch.bfloat16)
print(f"tiny llama loss: cpu fp32 {cpu_loss:.5f}, cuda bf16 {gpu_loss:.5f} (bf16 rounding: within ~1e-2)")
PY

say "== 3. 1.3B GPT training benchmark (bf16, one GPU)"
timeout 420 "$PY" - "$DEST" <<'PY' 2>&1 | tee -a "$LOG"
import sys, time, torch
from megazoo.core.train import RunConfig, Trainer
dest = sys.argv[1]
sets = ["model.arch=gpt", "model.num_layers=24", "model.hidden_size=2048", "model.num_heads=16",
        "model.vocab_size=50304", "model.seq_length=2048", "train.micro_batch=8", "train.global_batch=8",
        "train.steps=100", "data.synthetic=true", "precision.dtype=bf16", "log.progress=false",
        "checkpoint.save=false", "checkpoint.resume=none", f"log.dir={dest}/gpt-1.3b", "train.eval_iters=1"]
tr = Trainer(RunConfig.load("gpt-tiny", sets), monitor=False)
n = tr.builder.num_parameters(1)
times = []
for i in range(8):
    mbs = tr.train_data.step(tr.consumed_samples)
    flops, tokens = tr._step_flops(mbs)
    torch.cuda.synchronize()
    t = time.perf_counter()
    out = tr.train_step(mbs)
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t)
    print(f"step {i + 1}: {times[-1]:.3f} s, loss {out['loss']:.3f}", flush=True)
dt = min(times[2:])
print(f"GPT {n / 1e9:.2f}B, {torch.cuda.get_device_name(0)}: best step {dt:.3f} s, {tokens / dt:,.0f} tokens/s, "
      f"{flops / dt / 1e12:.1f} TFLOP/s, MFU {100 * flops / dt / tr.peak:.1f}% of {tr.peak / 1e12:.0f} TFLOP/s "
      f"({tr.peak_source}); peak memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
tr.close()
PY
say "log: $LOG"
