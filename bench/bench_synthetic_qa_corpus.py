"""synthetic_qa from a sampled corpus (issue 40, point 3; generated data, not SQuAD): recipes/synthetic_qa.sh
with PARAGRAPHS=sampled (SmolLM2 continues the first sentence of each of the data stage's text
paragraphs; the corpus stage cuts and deduplicates against the text, training and dev paragraphs),
run once per question-generator input (QG_INPUT=paragraph, the paper's, and sentence), with the
baselines of bench/bench_synthetic_qa.py on each run's generated questions. What it shows, per
QG input, on the package's hand-written dev set (66 questions):

    untrained      MiniLM with a fresh span head (lr 0, one step)
    human          trained on the 294 hand-written training questions (the filter's QA model)
    unfiltered     trained on every generated pair of the sampled corpus
    filtered       trained on the pairs the roundtrip filter keeps (the recipe's QA model)

and the corpus stage's counts (sampled, kept, every drop by its reason) and time.

    python bench/bench_synthetic_qa_corpus.py [--out runs/bench-synthetic_qa-corpus] [--corpus sampled|supplied]
        [--qg-input paragraph,sentence] [--jobs 3] [--sizes full|smoke] [--write-results]

Each QG input is a run folder OUT/QG_INPUT. The parts that do not depend on the input (the imported
models, the answer extractor, the filter's QA model, the corpus and its candidate answers) are made
by the first run and linked into the next, whose data stage writes its own question-generator pairs;
so the two generators see the same paragraphs and answers. A finished run is not redone (delete
its folder to redo it). `--sizes smoke` is a check that the pipeline runs (8 paragraphs, 2 training
steps), not a measurement (its numbers go to OUT/results.json only). Writes
bench/synthetic_qa_corpus_results.json; --write-results also
replaces the "## Synthetic QA from a sampled corpus" section of bench/RESULTS.md.

The recipe, its baselines and its evaluations are bench_synthetic_qa.py's functions (imported, not
changed); this file sets the recipe's environment (PARAGRAPHS, QG_INPUT) and the sizes.
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
sys.path.insert(0, str(HERE))
import bench_synthetic_qa as base  # noqa: E402  (bench/ is not a package)

QG_INPUTS = ("paragraph", "sentence")
CORPUS = {"per_prompt": 1, "min_words": 30, "max_words": 120}
SMOKE = {"text_paragraphs": 8, "top": 1, "samples": 1}
SMOKE_STEPS = ["train.steps=2"]
# made once, linked into the next QG input's run: none depends on the question generator's input
SHARED = ("minilm", "smollm2", "answers", "bootstrap", "corpus_prompts.jsonl", "corpus.json", "corpus.counts.json",
          "answers.json")
HEADING = "## Synthetic QA from a sampled corpus (bench/bench_synthetic_qa_corpus.py)"


def prepare(first: Path, out: Path, qg_input: str) -> None:
    """The next QG input's folder: its own data stage (its qg.jsonl), the shared parts linked."""
    out.mkdir(parents=True, exist_ok=True)
    if not (out / "data" / "dev.json").exists():
        subprocess.run(base.megazoo("task", "synthetic_qa", "data", str(out / "data"), "--text-paragraphs",
                                    str(base.SIZES["text_paragraphs"]), "--qg-input", qg_input), check=True)
    for name in SHARED:
        if (first / name).exists() and not (out / name).exists():
            (out / name).symlink_to((first / name).resolve())


def run_one(out: Path, qg_input: str, corpus: str, jobs: int) -> dict:
    os.environ.update({"PARAGRAPHS": corpus, "QG_INPUT": qg_input, "PER_PROMPT": str(CORPUS["per_prompt"]),
                       "MIN_WORDS": str(CORPUS["min_words"]), "MAX_WORDS": str(CORPUS["max_words"])})
    rec, baselines = base.recipe(out, jobs, {})
    base.evaluate_all(out)
    evals = {n: json.loads((out / f"eval-{n}.json").read_text())["metrics"]
             for n in ("untrained", "human", "unfiltered", "filtered")}
    counts = out / "corpus.counts.json"
    return {"qg_input": qg_input, "recipe": rec, "baselines": baselines, "dev": evals,
            "corpus": json.loads(counts.read_text()) if counts.exists() else None,
            "questions": json.loads((out / "questions.counts.json").read_text()),
            "filter": json.loads((out / "kept.counts.json").read_text()),
            "kept_examples": base.examples(out / "kept.json"),
            "rejected_examples": base.examples(out / "rejected.json")}


def section(r: dict) -> str:
    rows = []
    for run in r["runs"]:
        for name, m in run["dev"].items():
            rows.append(f"| {run['qg_input']} | {name} | {100 * m['exact_match']:.1f} | {100 * m['f1']:.1f} |")
    first = r["runs"][0]
    c = first["corpus"] or {}
    corpus_s = first["recipe"]["stages"].get("corpus", {}).get("wall_s", 0)
    corpus = ("" if not c else
              f"Corpus: {c['sampled']} paragraphs sampled, {c['kept']} kept ({c['empty']} empty, {c['unfinished']} "
              f"unfinished, {c['too_short']} too short, {c['source_overlap']} sharing a 13-gram with the source, "
              f"{c['duplicate']} duplicates, {c['near_duplicate']} near duplicates; {c['cut_at_max_words']} cut at "
              f"{c['settings']['max_words']} words); corpus stage {corpus_s:.0f} s.\n")
    paragraphs = ("the paragraphs are sampled by SmolLM2-135M from the first sentences of the data stage's text "
                  "paragraphs (Python's documentation), not supplied" if r["corpus"] == "sampled" else
                  "the paragraphs are the data stage's text paragraphs (Python's documentation), supplied")
    yields = "\n".join(f"- {run['qg_input']}: {run['questions']['questions']} questions, {run['filter']['kept']} kept "
                       f"({100 * run['filter']['kept_share']:.1f}%); recipe "
                       f"{run['recipe']['wall_s'] / 60:.1f} min wall, {run['recipe']['cpu_s'] / 60:.1f} min CPU"
                       for run in r["runs"])
    yields += "\n(a second run reuses the first's imported models, answer extractor, filter QA model, corpus, answers)"
    return f"""{HEADING}

`python bench/bench_synthetic_qa_corpus.py --corpus {r['corpus']} --sizes {r['sizes_name']}` on {r['date']},
{r['machine']}. **Generated data**: {paragraphs}; dev: the 66 hand-written questions. Not SQuAD, not the
paper's figures.

{corpus}
| QG input | QA model | dev EM | dev F1 |
|---|---|---|---|
{chr(10).join(rows)}

{yields}
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="runs/bench-synthetic_qa-corpus")
    p.add_argument("--corpus", choices=("sampled", "supplied"), default="sampled",
                   help="the recipe's PARAGRAPHS: the sampled corpus (default) or the data stage's paragraphs")
    p.add_argument("--qg-input", default=",".join(QG_INPUTS), help="comma-separated: paragraph, sentence or both")
    p.add_argument("--jobs", type=int, default=1, help="JOBS of the recipe: its three first trainings at once")
    p.add_argument("--sizes", choices=("full", "smoke"), default="full")
    p.add_argument("--machine", default="", help="the machine, for the section (e.g. 'AMD EPYC, 2 cores, shared')")
    p.add_argument("--write-results", action="store_true", help="replace the section of bench/RESULTS.md")
    args = p.parse_args(argv)
    inputs = [s.strip() for s in args.qg_input.split(",") if s.strip()]
    if not inputs or any(s not in QG_INPUTS for s in inputs):
        p.error(f"--qg-input {args.qg_input}: give paragraph, sentence or both, comma-separated")
    if args.sizes == "smoke":  # the recipe's env is built from these module globals when it runs
        base.SIZES.update(SMOKE)
        base.QA, base.FINAL, base.QG = [*base.QA, *SMOKE_STEPS], [*base.FINAL, *SMOKE_STEPS], [*base.QG, *SMOKE_STEPS]
        CORPUS.update(min_words=10)
    root = Path(args.out)
    runs = []
    for i, qg_input in enumerate(inputs):
        out = root / qg_input
        if i:
            prepare(root / inputs[0], out, qg_input)
        runs.append(run_one(out, qg_input, args.corpus, args.jobs))
    r = {"corpus": args.corpus, "sizes_name": args.sizes, "sizes": base.SIZES, "corpus_settings": CORPUS,
         "machine": args.machine or f"{os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d"), "runs": runs}
    # a smoke run's numbers are no result: they stay in its folder
    path = HERE / "synthetic_qa_corpus_results.json" if args.sizes == "full" else root / "results.json"
    path.write_text(json.dumps(r, indent=1, ensure_ascii=False) + "\n")
    text = section(r)
    print(text)
    if args.write_results and args.sizes == "full":
        from results import write_section

        write_section(HEADING, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
