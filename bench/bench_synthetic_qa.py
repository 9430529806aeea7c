"""synthetic_qa end to end on the embedded corpus (generated data, not SQuAD): recipes/synthetic_qa.sh
run once (its wall and CPU time, and the wall time of each stage from its stages.tsv), with the
yield of every stage, examples of kept and rejected pairs, and the QA model's EM/F1 on the
package's hand-written dev set (66 questions) for four models of the same recipe and steps:

    untrained      MiniLM with a fresh span head (the recipe at lr 0: one step that changes nothing)
    human          trained on the package's hand-written training questions (294; the roundtrip
                   filter's QA model, as Puri et al.'s filter is trained on SQuAD)
    unfiltered     trained on every generated (question, answer) pair
    filtered       trained on the pairs that survive the roundtrip filter (the recipe's QA model)

    python bench/bench_synthetic_qa.py [--out runs/bench-synthetic_qa] [--jobs 3] [--write-results]

The recipe is not run again once its dev score exists, nor a baseline whose output exists, so an
interrupted run resumes. Writes bench/synthetic_qa_results.json and bench/synthetic_qa_f1.png;
--write-results also replaces the "## synthetic_qa" section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# CPU settings (the recipe's defaults; the QA models' recipes have larger ones)
CPU_QA = ["train.lr=2e-4", "task.max_seq_length=128", "task.doc_stride=64", "task.max_query_length=40",
          "model.dropout=0.0", "model.attention_dropout=0.0"]
QA = ["train.steps=150", *CPU_QA]           # answer extractor and the filter's QA model (hand-written questions)
FINAL = ["train.steps=150", *CPU_QA]        # the QA models compared on the dev set
QG = ["train.steps=100", "train.lr=2e-4"]
SIZES = {"text_paragraphs": 600, "top": 2, "samples": 2}
QUIET = ["log.progress=false", "checkpoint.resume=none"]


def megazoo(*args: str) -> list[str]:
    return [sys.executable, "-m", "megazoo.cli", *args]


def wait_cpu(proc: subprocess.Popen) -> tuple[int, float]:
    """Wait for a child; (exit status, CPU seconds of it and every descendant it waited for)."""
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, ru.ru_utime + ru.ru_stime


def baseline_procs(out: Path) -> list:
    """The unfiltered and untrained QA models, started as soon as the generated questions exist
    (untrained: lr 0, one step, so its data does not matter)."""
    train = ("task", "synthetic_qa", "train", "synthetic_qa", "--set", *FINAL, *QUIET,
             f"train.init_from={out / 'minilm'}", f"data.path={out / 'questions.json'}")
    runs = {"unfiltered": [], "untrained": ["train.steps=1", "train.lr=0", "train.min_lr=0"]}
    return [(name, subprocess.Popen(megazoo(*train, *extra, f"log.dir={out / name}"))) for name, extra in runs.items()
            if not (out / name / "summary.txt").exists()]


def recipe(out: Path, jobs: int, prior: dict) -> tuple[dict, dict]:
    """recipes/synthetic_qa.sh end to end (skipped when its dev score exists), then the two
    baselines (both at once); the recipe's wall and CPU time (plus `prior`: an earlier,
    interrupted launch of it that this one resumed) and the per-stage table it writes (stages.tsv)."""
    times = out / "recipe_time.json"
    if (out / "dev.score.json").exists() and times.exists():
        return json.loads(times.read_text()), json.loads((out / "baselines_time.json").read_text())
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "JOBS": str(jobs),
           "TEXT": str(SIZES["text_paragraphs"]), "TOP": str(SIZES["top"]), "SAMPLES": str(SIZES["samples"]),
           "QA_SETTINGS": " ".join(QA + QUIET), "FINAL_SETTINGS": " ".join(FINAL + QUIET),
           "QG_SETTINGS": " ".join(QG + QUIET)}
    t0, load0 = time.time(), os.getloadavg()[0]
    proc = subprocess.Popen(["bash", str(ROOT / "recipes" / "synthetic_qa.sh"), str(out)], env=env)
    status, cpu = wait_cpu(proc)
    if status:
        raise SystemExit(f"recipes/synthetic_qa.sh failed ({status})")
    r = {"wall_s": time.time() - t0 + prior.get("wall_s", 0.0), "cpu_s": cpu + prior.get("cpu_s", 0.0),
         "prior_launch": prior, "load_start": load0, "load_end": os.getloadavg()[0], "jobs": jobs}
    rows = [line.split("\t") for line in (out / "stages.tsv").read_text().splitlines()[1:]]
    r["stages"] = {name: {"wall_s": float(w), "cpu_s_so_far": float(c)} for name, w, c in rows}
    times.write_text(json.dumps(r, indent=1))
    b = {"cpu_s": 0.0}
    for name, p in baseline_procs(out):  # after the recipe, so that its time is its own
        status, cpu = wait_cpu(p)
        if status:
            raise SystemExit(f"the {name} baseline failed ({status})")
        b["cpu_s"] += cpu
    (out / "baselines_time.json").write_text(json.dumps(b))
    return r, b


def evaluate_all(out: Path) -> None:
    for name, ckpt in (("untrained", "untrained"), ("human", "bootstrap"), ("unfiltered", "unfiltered"),
                       ("filtered", "qa")):
        if not (out / f"eval-{name}.json").exists():
            subprocess.run(megazoo("task", "synthetic_qa", "evaluate", "--data", str(out / "data" / "dev.json"),
                                   "--checkpoint", str(out / ckpt), "--out", str(out / f"eval-{name}.json")),
                           check=True)  # its predictions go to eval-NAME.predictions.json


def examples(path: Path, n: int = 6) -> list[dict]:
    rows = []
    for art in json.loads(path.read_text())["data"]:
        for p in art["paragraphs"]:
            for q in p["qas"]:
                rows.append({"question": q["question"], "answer": q["answers"][0]["text"],
                             "qa_answer": q.get("qa_answer")})
    step = max(len(rows) // n, 1)
    return rows[::step][:n]


def collect(out: Path, rec: dict, base: dict) -> dict:
    evals = {n: json.loads((out / f"eval-{n}.json").read_text())["metrics"]
             for n in ("untrained", "human", "unfiltered", "filtered")}
    gen = json.loads((out / "data" / "dev.json").read_text())
    train = json.loads((out / "data" / "train.json").read_text())
    answers = sum(len(p["qas"]) for a in json.loads((out / "answers.json").read_text())["data"] for p in a["paragraphs"])
    return {"data": "generated from the embedded corpus (Python's documentation); dev: 66 hand-written questions",
            "sizes": SIZES, "qa_settings": QA, "final_settings": FINAL, "qg_settings": QG, "recipe": rec,
            "baselines": base, "dev_questions": sum(len(p["qas"]) for a in gen["data"] for p in a["paragraphs"]),
            "train_questions": sum(len(p["qas"]) for a in train["data"] for p in a["paragraphs"]),
            "yield": {"paragraphs": SIZES["text_paragraphs"], "answers": answers,
                      "questions": json.loads((out / "questions.counts.json").read_text()),
                      "filter": json.loads((out / "kept.counts.json").read_text())},
            "dev": evals, "kept_examples": examples(out / "kept.json"),
            "rejected_examples": examples(out / "rejected.json"), "cpus": os.cpu_count()}


def section(r: dict) -> str:
    y, f, q, rec = r["yield"], r["yield"]["filter"], r["yield"]["questions"], r["recipe"]
    # the evaluations hold fractions; the table shows percentages, as the official script prints them
    rows = "\n".join(f"| {n} | {100 * m['exact_match']:.1f} | {100 * m['f1']:.1f} |" for n, m in r["dev"].items())
    stages = ", ".join(f"{k} {v['wall_s']:.0f}" for k, v in rec["stages"].items() if k != "total")
    kept = "\n".join(f"- kept: \"{e['question']}\" -> {e['answer']}" for e in r["kept_examples"][:5])
    rej = "\n".join(f"- rejected: \"{e['question']}\" -> {e['answer']} (QA model: {e['qa_answer']})"
                    for e in r["rejected_examples"][:5])
    gain = 100 * (r["dev"]["filtered"]["f1"] - r["dev"]["untrained"]["f1"])
    return f"""## synthetic_qa

`python bench/bench_synthetic_qa.py --jobs {rec['jobs']}` (runs recipes/synthetic_qa.sh, then the baselines).
**Generated data**: paragraphs of the embedded corpus (Python's documentation; every paragraph sharing a
sentence with a dev paragraph held out); {r['train_questions']} hand-written training questions on 98 other
paragraphs (tasks/synthetic_qa/data/train.json: what the answer extractor, the question generator and the filter's
QA model learn from, as Puri et al.'s learn from SQuAD); and a hand-written dev set of {r['dev_questions']} questions (tasks/synthetic_qa/data/dev.json); not SQuAD, and not the
paper's figures. Models: MiniLM (all-MiniLM-L6-v2) with the span head for the answer extractor and the filter's
QA model ({' '.join(r['qa_settings'][:2])}, seq 128, stride 64) and for the compared QA models
({r['final_settings'][0]}); SmolLM2-135M fine-tuned with sft as the question generator ({' '.join(r['qg_settings'])},
top 8 of 30 layers trained; trained and sampled in bf16 where the CPU has native bf16).

Yield: {y['paragraphs']} paragraphs -> {y['answers']} candidate answers ({r['sizes']['top']} per paragraph) ->
{q['sampled']} sampled questions ({r['sizes']['samples']} per answer; {q["empty"]} empty, {q["not_question"]} without a
question mark, {q["repeated"]} repeated dropped) -> {q['questions']} questions -> {f['kept']} kept by the roundtrip
filter (answer F1 >= {f['threshold']} with the proposed one, {100 * f['kept_share']:.1f}%); {f['answers_kept']} of {f['answers']} answers keep a question,
{f['answers_kept_first_sample']} with the first sample alone (overgeneration's gain).

| QA model (dev, {r['dev_questions']} questions) | EM | F1 |
|---|---|---|
{rows}

Filtered minus untrained: {gain:+.1f} F1.

{kept}
{rej}

Time (recipe end to end, JOBS={rec['jobs']}): {rec['wall_s'] / 60:.1f} min wall, {rec['cpu_s'] / 60:.1f} min CPU
(CPU / {r['cpus']} cores = {rec['cpu_s'] / 60 / r['cpus']:.1f} min) on {r['cpus']} cores
(load average {rec['load_start']:.0f} at the start, {rec['load_end']:.0f} at the end); stage wall seconds: {stages}.
The two baselines (trained at once after the recipe): {r['baselines']['cpu_s'] / 60:.1f} min CPU.
"""


def plot(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(r["dev"])
    fig, ax = plt.subplots(figsize=(6, 3.2))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], [100 * r["dev"][n]["exact_match"] for n in names], 0.4, label="EM")
    ax.bar([x + 0.2 for x in xs], [100 * r["dev"][n]["f1"] for n in names], 0.4, label="F1")
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("dev score (x100)")
    ax.set_title("synthetic_qa: MiniLM QA, hand-written dev set\n(generated training data)", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/bench-synthetic_qa")
    p.add_argument("--jobs", type=int, default=1, help="JOBS of the recipe: its three first trainings at once")
    p.add_argument("--prior-wall", type=float, default=0.0, help="wall seconds of an interrupted launch this resumes")
    p.add_argument("--prior-cpu", type=float, default=0.0, help="CPU seconds of that launch")
    p.add_argument("--write-results", action="store_true", help="replace the section of bench/RESULTS.md")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    prior = {"wall_s": args.prior_wall, "cpu_s": args.prior_cpu} if args.prior_cpu else {}
    rec, base = recipe(out, args.jobs, prior)
    evaluate_all(out)
    r = collect(out, rec, base)
    (HERE / "synthetic_qa_results.json").write_text(json.dumps(r, indent=1, ensure_ascii=False) + "\n")
    plot(r, HERE / "synthetic_qa_f1.png")
    text = section(r)
    print(text)
    if args.write_results:
        from results import write_section

        write_section("## synthetic_qa", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
