"""ZeRO-3's import (issue 43, point 4): peak RSS per rank at the start of a ZeRO-3 run at dp 2 that
starts from a Hugging Face folder, reading it a unit at a time into the shards (the new path) against
building the whole model, loading the whole folder and sharding afterwards (today's path, which the
run takes where the import cannot be).

Model: a random Llama in a Hugging Face folder (safetensors, fp32, generated here: no real weights),
12 layers, hidden 768, 12 heads, ffn 2048, vocabulary 32000, untied head (~134M parameters). Each
path runs in fresh gloo ranks (1 thread each); a rank reports its RSS after its imports and the
process's peak RSS once the Trainer is built (the model sharded, the optimizer made), before any step.

    python bench/bench_shard_import.py [--folder DIR] [--write]

--write replaces its section of bench/RESULTS.md.

Figures on generated data (random weights); the RSS includes torch's and transformers' own memory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

LLAMA = dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=12,
             num_key_value_heads=12, max_position_embeddings=128, tie_word_embeddings=False)
RUN = ["model.arch=llama", "model.num_layers=12", "model.hidden_size=768", "model.num_heads=12",
       "model.vocab_size=32000", "model.seq_length=128", "parallel.shard=full", "train.global_batch=2",
       "train.micro_batch=1", "train.steps=1", "log.progress=false", "log.plot=false", "checkpoint.save=false",
       "checkpoint.resume=none", "train.eval_iters=1", "optim.bucket_size=40000000"]


def make_folder(folder: Path) -> int:
    """A random Llama in an HF folder (its tensors' names and shapes from a meta-device model); its
    parameter count."""
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**LLAMA)
    with torch.device("meta"):
        shapes = {k: v.shape for k, v in LlamaForCausalLM(config).state_dict().items()}
    g = torch.Generator().manual_seed(0)
    state = {k: torch.randn(s, generator=g) * 0.02 for k, s in shapes.items()}
    folder.mkdir(parents=True, exist_ok=True)
    config.architectures = ["LlamaForCausalLM"]
    config.save_pretrained(folder)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return sum(t.numel() for t in state.values())


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _rank(root: str, folder: str, path: str) -> dict:
    import os

    os.environ["MEGAZOO_PEAK_TFLOPS"] = "1"  # no peak FLOP/s measurement (rank 0's GEMMs) inside the start
    from megazoo.core.train import RunConfig, Trainer
    from megazoo.zoo.builder_base import ModelBuilder

    if path == "today":
        ModelBuilder.weight_reader = lambda self, p, ctx: (None, "today's path (bench)")
    cfg = RunConfig.load("gpt-tiny", RUN + [f"train.init_from={folder}", f"log.dir={root}/{path}"])
    before = _rss_mib()
    t = time.perf_counter()
    trainer = Trainer(cfg, monitor=False)
    seconds = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    held = trainer.optimizer.buffers.bytes_held()["weights"] / 2**20
    note = trainer.init_note
    trainer.close()
    return {"rss_before_mib": before, "peak_rss_mib": peak, "start_s": seconds, "weights_held_mib": held, "note": note}


def main(argv=None) -> dict:
    from megazoo.core.parallel.launch import spawn

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", help="where to write the generated HF folder (default: a temporary folder)")
    ap.add_argument("--write", action="store_true", help="replace this bench's section of bench/RESULTS.md")
    args = ap.parse_args(argv)
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.folder or tmp) / "llama-134m"
        numel = make_folder(folder) if not (folder / "model.safetensors").exists() else None
        out = {"parameters": numel, "fp32_model_mib": None if numel is None else 4 * numel / 2**20}
        for path in ("unit-by-unit", "today"):
            out[path] = spawn(_rank, 2, tmp, str(folder), path, timeout=1800)
    print(json.dumps(out, indent=1))
    if args.write:
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from results import write_section  # bench/results.py

        write_section(HEADING, section(out, load_start, os.getloadavg()[0]))
    return out


HEADING = "## ZeRO-3 start from a Hugging Face folder (bench/bench_shard_import.py)"


def section(out: dict, load_start: float, load_end: float) -> str:
    from megazoo.core.parallel.device import cpu_facts

    rows = []
    for path, name in (("unit-by-unit", "unit by unit into the shards (new)"), ("today", "whole model, then sharded")):
        r = out[path]
        def per_rank(key: str, fmt: str) -> str:
            return " / ".join(format(x[key], fmt) for x in r)

        rows.append(f"| {name} | {per_rank('peak_rss_mib', ',.0f')} | {per_rank('weights_held_mib', ',.0f')} | "
                    f"{per_rank('start_s', '.1f')} |")
    model = f"{out['parameters'] / 1e6:.1f}M parameters, {out['fp32_model_mib']:,.0f} MiB in fp32" \
        if out.get("parameters") else "the folder given"
    return f"""{HEADING}

Issue 43, point 4. `parallel.shard: full` at dp 2 (gloo, one thread per rank) starting from a Hugging Face
folder (safetensors, fp32; a random Llama GENERATED here, 12 layers, hidden 768, ffn 2048, vocabulary
32000: {model}). New path: each rank builds its chunks on the meta device and reads the folder one ZeRO-3
unit at a time, tensor by tensor, keeping its slice (core/train/sharded_init.py, zoo/hf/lazy.py); today's
path (still taken for training checkpoints, GGUF and .bin weights): the whole model built and loaded on
every rank, then sharded. Peak RSS of each rank once the Trainer is built (model sharded, optimizer made,
before any step); RSS after the imports {out['unit-by-unit'][0]['rss_before_mib']:,.0f} MiB. {cpu_facts()[0]},
2 cores, load average {load_start:.2f} at the start and {load_end:.2f} at the end, {time.strftime('%Y-%m-%d')}.

| start | peak RSS per rank (MiB) | weights held per rank (MiB) | Trainer built in (s) |
|---|---|---|---|
{chr(10).join(rows)}

Both paths give bit-equal weights (tests/test_shard_import.py, which also bounds the tensor bytes alive at
once during the start by the rank's shards plus one unit). What remains of the new path's peak is the
rank's fp32 shards: weights, gradient and both Adam moments (the moments are made at the start, for the
checkpoint-space check).
"""


if __name__ == "__main__":
    main()
