"""Scale curve of the streamed readers (issue #38, point 1): DPR's biencoder-nq-train.json read by
megazoo.tasks.retrieval's iter_dpr_json, Wizard of Wikipedia's train.json read by megazoo.tasks.dialogue's
iter_wow, DPR's psgs_w100.tsv read by megazoo.tasks.retrieval's iter_passages and SQuAD 2.0's
train-v2.0.json read by megazoo.tasks.synthetic_qa's iter_squad, on files GENERATED here in the real
files' layouts (not the real datasets), at three sizes.

    python bench/bench_readers.py [--formats dpr,wow,psgs,squad] [--sizes 64,256,1024] [--old-sizes 8,16]
                                  [--repeats 3] [--out DIR] [--keep]

--formats runs only the named formats; the rows of the others are kept from the previous
bench/readers_results.json, so the files written always hold every format measured.

The layouts, as the releases have them:
- DPR nq-train: one JSON array pretty-printed with 4-space indents, items {dataset, question,
  answers, positive_ctxs, negative_ctxs, hard_negative_ctxs}, contexts {title, text (a ~100-word
  psgs_w100 passage), score (1000 for the gold positive, else a BM25 float), title_score,
  passage_id}: 1 positive, 50 negatives and 30 hard negatives per question (DPR issues #42, #91).
- WoW train: one JSON array on one line (ParlAI's json.dump), dialogues {chosen_topic, persona,
  wizard_eval, dialog, chosen_topic_passage}; ~9 turns per dialogue (166,787 turns in 18,430 train
  dialogues, Dinan et al. 2019, table 1), each turn {speaker, text, retrieved_passages: 7 x
  {topic: [4-6 sentences]}, retrieved_topics: 7 titles}, the wizard's turns also checked_sentence
  and checked_passage (ParlAI's wizard_of_wikipedia test fixtures show the same per-turn fields).
- psgs_w100.tsv: a header `id<TAB>text<TAB>title`, then `id<TAB>"text"<TAB>title` rows (DPR's csv tab
  dialect quotes the text), ids 1, 2, ..., a ~100-word passage each (about 650 bytes a row).
- SQuAD 2.0 train: one JSON object on one line (json.dump, ASCII escapes), {"version": "v2.0", "data":
  [articles]}; an article {title, paragraphs} of ~45 paragraphs {qas, context (~120 words)}, ~5
  questions each {question, id (24 hex digits), answers [{text, answer_start}], is_impossible}, one in
  three impossible with plausible_answers instead (train has about twice as many answerable).

Each file is fsynced after it is written (so that writeback does not overlap the reads; the reads then
come from the page cache: this measures the parser, not the disk). Each read runs in a fresh process
(`--measure`), which starts the reader as its only child and takes
that child's peak RSS from resource.getrusage(RUSAGE_CHILDREN).ru_maxrss; the reader counts what the
generator yields and keeps nothing. The checks: CPU seconds per GB within 25% across the sizes (linear
time; the best of --repeats reads; CPU, not wall, because this machine's 2 cores are shared and the wall
time includes waiting for one: both are reported) and peak RSS growth over the smallest size under 500 MiB (bounded
memory; the worst read). The real files' sizes are projected from their item counts (the papers) times
the generated files' mean item size, and their read times from the largest size's s/GB. The OLD readers
(commit 09e18ca's tasks/retrieval/data.py and tasks/dialogue/data.py + jsonpos.py, extracted with `git show`
into a temporary folder) are timed at the small --old-sizes only: they are quadratic.
Writes bench/readers_results.json, bench/readers_scale.png and bench/readers_results.md; the data
files are deleted after their read unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MB = 1 << 20
# the real files: item counts from the papers; the bytes are projected from the generated files'
# mean item size (no authoritative byte count was found; issue #38 says "several GB" and "~0.6 GB")
REAL = {"dpr": ("biencoder-nq-train.json", 58_880, "questions (DPR paper, table 1; DPR issue #221)"),
        "wow": ("train.json", 18_430, "dialogues (Dinan et al. 2019, table 1)"),
        "psgs": ("psgs_w100.tsv", 21_015_324, "passages (DPR's release; HF wiki_dpr lists 21,015,300 rows)"),
        "squad": ("train-v2.0.json", 130_319, "questions (SQuAD 2.0 train; HF squad_v2 card)")}
NAMES = {"dpr": "DPR nq-train", "wow": "WoW train", "psgs": "DPR psgs_w100.tsv", "squad": "SQuAD 2.0 train"}
SUFFIX = {"dpr": ".json", "wow": ".json", "psgs": ".tsv", "squad": ".json"}
OLD_KINDS = ("dpr", "wow")  # the formats whose old reader was quadratic, timed at --old-sizes
OLD_COMMIT = "09e18ca"  # the last commit with the quadratic readers
OLD_FILES = ("tasks/retrieval/data.py", "tasks/dialogue/data.py", "tasks/dialogue/jsonpos.py")


# ---- synthetic files in the real layouts ---------------------------------------------------------
def _words() -> list[str]:
    """English words of the embedded corpus, with a few non-ASCII ones (escaped as \\uXXXX by json)."""
    from megazoo.core.data.corpus import documents

    words = re.findall(r"[A-Za-z]{2,12}", " ".join(documents("stdlib")))
    return words + ["café", "Zürich", "São", "Ångström", "naïve", "Dvořák"]


def _sentence(rng: random.Random, words: list[str], lo: int, hi: int) -> str:
    s = " ".join(rng.choice(words) for _ in range(rng.randint(lo, hi)))
    return s[:1].upper() + s[1:] + "."


def _title(rng, words) -> str:
    return " ".join(rng.choice(words).capitalize() for _ in range(rng.randint(1, 3)))


def _dpr_contexts(rng, words, n: int = 4000) -> list[str]:
    """Context objects pre-rendered at the release's indentation (inside an item's list)."""
    out, pad = [], " " * 16
    for _ in range(n):
        title = _title(rng, words)
        text = title + " " + " ".join(_sentence(rng, words, 12, 25) for _ in range(5))  # ~100 words
        score = 1000 if rng.random() < 0.02 else round(rng.uniform(5, 30), 6)
        fields = [("title", json.dumps(title)), ("text", json.dumps(text)), ("score", json.dumps(score)),
                  ("title_score", str(rng.randint(0, 1))), ("passage_id", json.dumps(str(rng.randint(1, 21015324))))]
        body = ",\n".join(f'{pad}"{k}": {v}' for k, v in fields)
        out.append("            {\n" + body + "\n            }")
    return out


def _dpr_item(rng, words, contexts, counts=(1, 50, 30)) -> str:
    def ctx_list(n):
        return "[\n" + ",\n".join(rng.choice(contexts) for _ in range(n)) + "\n        ]"

    question = " ".join(rng.choice(words).lower() for _ in range(rng.randint(6, 12)))
    answers = [" " * 12 + json.dumps(_title(rng, words)) for _ in range(rng.randint(1, 3))]
    answers = "[\n" + ",\n".join(answers) + "\n        ]"
    fields = [("dataset", '"nq_train_psgs_w100"'), ("question", json.dumps(question)), ("answers", answers),
              ("positive_ctxs", ctx_list(counts[0])), ("negative_ctxs", ctx_list(counts[1])),
              ("hard_negative_ctxs", ctx_list(counts[2]))]
    return "    {\n" + ",\n".join(f'        "{k}": {v}' for k, v in fields) + "\n    }"


def _wow_dialogue(rng, words, passages) -> dict:
    topic = _title(rng, words)
    turns, wizard_first = [], rng.random() < 0.5
    for j in range(rng.randint(7, 11)):  # ~9 turns
        wizard = (j % 2 == 0) == wizard_first
        picked = [rng.choice(passages) for _ in range(7)]
        turn = {"speaker": "0_Wizard" if wizard else "1_Apprentice", "text": _sentence(rng, words, 8, 30),
                "retrieved_passages": [{t: s} for t, s in picked], "retrieved_topics": [t for t, _ in picked]}
        if wizard:
            t, sents = rng.choice(picked)
            used = rng.random() < 0.9
            turn["checked_sentence"] = {f"partner_{t.replace(' ', '_')}_0": sents[0]} if used else {}
            turn["checked_passage"] = {f"partner_{t.replace(' ', '_')}": t} if used else {}
        turns.append(turn)
    return {"chosen_topic": topic, "persona": _sentence(rng, words, 4, 10).lower(), "wizard_eval": rng.randint(1, 5),
            "dialog": turns, "chosen_topic_passage": [_sentence(rng, words, 10, 30) for _ in range(7)]}


def _passage(rng, words) -> str:
    return " ".join(_sentence(rng, words, 15, 25) for _ in range(5))  # ~100 words


def _squad_article(rng, words, start_id: int) -> tuple[dict, int]:
    """An article of ~45 paragraphs of ~5 questions; (article, question count)."""
    paragraphs, n = [], 0
    for _ in range(rng.randint(35, 55)):
        context = " ".join(_sentence(rng, words, 15, 25) for _ in range(6))  # ~120 words
        qas = []
        for _ in range(rng.randint(3, 7)):
            at = rng.randrange(0, len(context) - 30)
            at = context.rfind(" ", 0, at) + 1
            text = context[at:at + rng.randint(5, 25)].rstrip()
            qa = {"question": _sentence(rng, words, 6, 14)[:-1] + "?", "id": f"{start_id + n:024x}"}
            if rng.random() < 1 / 3:
                qa.update(plausible_answers=[{"text": text, "answer_start": at}], answers=[], is_impossible=True)
            else:
                qa.update(answers=[{"text": text, "answer_start": at}], is_impossible=False)
            qas.append(qa)
            n += 1
        paragraphs.append({"qas": qas, "context": context})
    return {"title": _title(rng, words).replace(" ", "_"), "paragraphs": paragraphs}, n


def make_file(kind: str, path: Path, megabytes: float, seed: int = 0) -> int:
    """A `kind` ("dpr", "wow", "psgs" or "squad") file of about `megabytes` MiB at `path`; returns the item
    count (questions, dialogues, passages, questions)."""
    rng, words = random.Random(seed), _words()
    size, n, limit = 0, 0, megabytes * MB
    with open(path, "w", encoding="utf-8", newline="") as f:
        if kind == "psgs":
            pool = [_passage(rng, words) for _ in range(5000)]
            titles = [_title(rng, words) for _ in range(2000)]
            f.write("id\ttext\ttitle\n")
            while size < limit:
                text = f'{n + 1}\t"{rng.choice(pool)}"\t{rng.choice(titles)}\n'
                f.write(text)
                size, n = size + len(text), n + 1
        elif kind == "squad":
            f.write('{"version": "v2.0", "data": [')
            while size < limit:
                article, k = _squad_article(rng, words, n)
                text = (", " if n else "") + json.dumps(article)
                f.write(text)
                size, n = size + len(text), n + k
            f.write("]}")
        elif kind == "dpr":
            contexts = _dpr_contexts(rng, words)
            f.write("[\n")
            while size < limit:
                text = (",\n" if n else "") + _dpr_item(rng, words, contexts)
                f.write(text)
                size, n = size + len(text), n + 1
            f.write("\n]")
        else:
            passages = [(_title(rng, words), [_sentence(rng, words, 10, 30) for _ in range(rng.randint(4, 6))])
                        for _ in range(3000)]
            f.write("[")
            while size < limit:
                text = (", " if n else "") + json.dumps(_wow_dialogue(rng, words, passages))
                f.write(text)
                size, n = size + len(text), n + 1
            f.write("]")  # one line, as ParlAI's file
        f.flush()
        os.fsync(f.fileno())  # on disk before the reads: the kernel's writeback must not overlap the timing
    return n


# ---- one read, in a fresh process ---------------------------------------------------------------
def _old_reader(kind: str, old_dir: str):
    """The old read_dpr_json / read_wow (OLD_COMMIT), loaded from their files (their imports resolve to the package)."""
    import importlib.util

    def load(rel: str, name: str):
        spec = importlib.util.spec_from_file_location(name, Path(old_dir) / rel)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    if kind == "dpr":
        return load("tasks/retrieval/data.py", "old_retrieval_data").read_dpr_json
    load("tasks/dialogue/jsonpos.py", "megazoo.tasks.dialogue.jsonpos")  # the name the old data.py imports
    return load("tasks/dialogue/data.py", "old_dialogue_data").read_wow


def child(kind: str, impl: str, path: str, old_dir: str) -> None:
    """Read `path` once and print {"items", "seconds", "cpu_seconds"}: the new generator's yields counted,
    or the old reader's list."""
    if impl == "new":
        from megazoo.tasks.dialogue.data import iter_wow
        from megazoo.tasks.retrieval.data import iter_dpr_json, iter_passages
        from megazoo.tasks.synthetic_qa.squad import iter_squad

        reader = {"dpr": iter_dpr_json, "wow": iter_wow, "psgs": iter_passages, "squad": iter_squad}[kind]
    else:
        reader = _old_reader(kind, old_dir)
    start, cpu = time.perf_counter(), time.process_time()
    n = sum(1 for _ in reader(path))
    print(json.dumps({"items": n, "seconds": time.perf_counter() - start, "cpu_seconds": time.process_time() - cpu}))


def measure(argv: list[str]) -> None:
    """Run the reader (`--child ...`) as this process's only child; print its result and peak RSS."""
    out = subprocess.run([sys.executable, __file__, "--child", *argv], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"reader failed: {out.stderr.strip()[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps(result))


def run_one(kind: str, impl: str, path: Path, old_dir: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--measure", kind, impl, str(path), old_dir],
                         capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        raise SystemExit(out.stderr.strip()[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- the benchmark ----------------------------------------------------------------------------------
def extract_old(folder: Path) -> None:
    for rel in OLD_FILES:
        text = subprocess.run(["git", "show", f"{OLD_COMMIT}:{rel}"], cwd=ROOT, capture_output=True, text=True, check=True)
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text.stdout, encoding="utf-8")


def bench(kinds: list[str], sizes: list[float], old_sizes: list[float], out: Path, keep: bool,
          repeats: int) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    rows, made = [], {}
    with tempfile.TemporaryDirectory() as old_dir:
        extract_old(Path(old_dir))
        for kind in kinds:
            olds = old_sizes if kind in OLD_KINDS else []
            for impl, mbs in (("old", olds), ("new", sorted(set(olds) | set(sizes)))):
                for mb in mbs:
                    path = out / f"{kind}-{mb:g}MB{SUFFIX[kind]}"
                    if path not in made:
                        t0 = time.perf_counter()
                        made[path] = make_file(kind, path, mb)
                        print(f"generated {path.name}: {made[path]} items in {time.perf_counter() - t0:.0f} s",
                              flush=True)
                    runs = [run_one(kind, impl, path, old_dir) for _ in range(repeats if impl == "new" else 1)]
                    r = {"items": runs[0]["items"], "seconds": min(x["seconds"] for x in runs),  # the best run
                         "cpu_seconds": min(x["cpu_seconds"] for x in runs),
                         "peak_rss_mib": max(x["peak_rss_mib"] for x in runs)}  # the worst run
                    size = path.stat().st_size
                    gb = size / (1 << 30)
                    r.update(kind=kind, impl=impl, mb=size / MB, file_items=made[path], item_bytes=size / made[path],
                             s_per_gb=r["seconds"] / gb, cpu_s_per_gb=r["cpu_seconds"] / gb,
                             scale=mb in sizes and impl == "new")
                    rows.append(r)
                    print(f"{kind} {impl} {r['mb']:7.1f} MB: {r['seconds']:7.2f} s, {r['s_per_gb']:6.1f} s/GB, "
                          f"peak RSS {r['peak_rss_mib']:6.0f} MiB, {r['items']} items", flush=True)
                    if impl == "new" and not keep:
                        path.unlink()
    return rows


def summarise(rows: list[dict]) -> dict:
    result = {"generated": "synthetic files in the real layouts, not the real datasets", "rows": rows, "formats": {}}
    for kind in dict.fromkeys(r["kind"] for r in rows):
        scale = [r for r in rows if r["kind"] == kind and r["scale"]]
        base = scale[0]
        for r in scale:
            r["rss_growth_mib"] = r["peak_rss_mib"] - base["peak_rss_mib"]
        rates, cpu_rates = [r["s_per_gb"] for r in scale], [r["cpu_s_per_gb"] for r in scale]
        spread, cpu_spread = max(rates) / min(rates) - 1, max(cpu_rates) / min(cpu_rates) - 1
        growth = max(r["rss_growth_mib"] for r in scale)
        name, count, source = REAL[kind]
        item_bytes = sum(r["item_bytes"] for r in scale) / len(scale)
        real_gb = count * item_bytes / (1 << 30)
        result["formats"][kind] = {
            "cpu_s_per_gb_spread": cpu_spread, "linear": cpu_spread <= 0.25, "s_per_gb_spread": spread,
            "wall_linear": spread <= 0.25, "max_rss_growth_mib": growth, "bounded": growth < 500,
            "real_file": name, "real_items": count, "real_items_source": source, "projected_real_gb": real_gb,
            "projected_real_cpu_seconds": real_gb * scale[-1]["cpu_s_per_gb"],
            "projected_real_seconds": real_gb * scale[-1]["s_per_gb"]}
        old = [r for r in rows if r["kind"] == kind and r["impl"] == "old"]
        if old:  # quadratic: time x (size ratio) squared, from the largest old read
            ratio = real_gb * (1 << 30) / (old[-1]["mb"] * MB)
            result["formats"][kind]["projected_real_seconds_old"] = old[-1]["seconds"] * ratio ** 2
    return result


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    for kind, colour in (("dpr", "tab:blue"), ("wow", "tab:orange"), ("psgs", "tab:green"), ("squad", "tab:red")):
        for impl, style in (("new", "o-"), ("old", "x--")):
            rows = [r for r in result["rows"] if r["kind"] == kind and r["impl"] == impl]
            if rows:
                label = f"{NAMES[kind]} ({impl} reader)"
                ax_t.plot([r["mb"] for r in rows], [r["seconds"] for r in rows], style, color=colour, label=label)
                ax_m.plot([r["mb"] for r in rows], [r["peak_rss_mib"] for r in rows], style, color=colour, label=label)
    for ax, ylabel in ((ax_t, "seconds to read"), (ax_m, "peak RSS of the reading process (MiB)")):
        ax.set_xscale("log")
        ax.set_xlabel("file size (MiB, generated in the real layout)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.set_yscale("log")
    ax_m.set_ylim(bottom=0)
    ax_t.legend(fontsize=8)
    fig.suptitle("Streamed readers: time and memory against file size (issue #38)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _size(gb: float) -> str:
    return f"{gb:.1f} GB" if gb >= 1 else f"{gb * 1024:.0f} MB"


def markdown(result: dict) -> str:
    lines = ["## Streamed readers (bench/bench_readers.py)", "",
             "DPR `biencoder-nq-train.json` read by `iter_dpr_json` and Wizard of Wikipedia `train.json` read by "
             "`iter_wow` (eval/readers/json_stream.py: ijson's C backend, one item at a time), DPR `psgs_w100.tsv` "
             "read by `iter_passages` (csv over lines decoded one at a time, eval/readers/common.py text_lines) and "
             "SQuAD 2.0 `train-v2.0.json` read by `iter_squad` (eval/readers/lined_json.py member_items: ijson, one "
             "article at a time). The files are "
             "GENERATED by the script in the real layouts (DPR: 4-space-indented array, 1 positive + 50 negatives "
             "+ 30 hard negatives of ~100 words per question; WoW: one-line array, ~9 turns per dialogue with 7 "
             "retrieved passages each; psgs_w100: `id<TAB>\"text\"<TAB>title` rows of ~100 words; SQuAD: one-line "
             "object, ~45 paragraphs of ~5 questions per article, a third impossible), not the real datasets. "
             "Items are questions, dialogues, passages and questions. Each file is fsynced once written, so its reads "
             "come from the page cache (the parser's speed, not the disk's). Each read runs in a fresh process, "
             "best of the repeats; peak RSS is that process's ru_maxrss (getrusage RUSAGE_CHILDREN of a "
             "one-child parent), worst of the repeats. iter_squad keeps the question ids seen (its duplicate check, "
             "~110 bytes a question: ~14 MB for the real file), so its RSS grows with the questions of the file.", "",
             "| file | reader | MiB | items in the file | yielded | seconds | s/GB | CPU s/GB | peak RSS MiB "
             "| RSS growth MiB |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        growth = f"{r['rss_growth_mib']:.0f}" if "rss_growth_mib" in r else "-"
        growth = "0" if growth == "-0" else growth
        name = NAMES[r["kind"]]
        lines.append(f"| {name} | {r['impl']} | {r['mb']:.1f} | {r['file_items']} | {r['items']} | "
                     f"{r['seconds']:.2f} | {r['s_per_gb']:.1f} | {r['cpu_s_per_gb']:.1f} | "
                     f"{r['peak_rss_mib']:.0f} | {growth} |")
    lines.append("")
    for kind, f in result["formats"].items():
        old = (f"; the old reader: ~{f['projected_real_seconds_old'] / 3600:.0f} h, extrapolated as the square of "
               f"the size from its largest read" if "projected_real_seconds_old" in f else "")
        run = result.get("runs", {}).get(kind, {})
        load = run.get("load_average", result.get("load_average", [0, 0]))
        lines.append(f"- {f['real_file']} ({kind}; {run.get('repeats', result.get('repeats', 1))} read(s) per size, load "
                     f"average {load[0]:.1f} to {load[1]:.1f}): CPU s/GB spread {f['cpu_s_per_gb_spread']:.0%} across the sizes "
                     f"({'linear: within 25%' if f['linear'] else 'NOT within 25%'}); wall s/GB spread "
                     f"{f['s_per_gb_spread']:.0%}; peak RSS growth at most {f['max_rss_growth_mib']:.0f} MiB "
                     f"({'under' if f['bounded'] else 'NOT under'} 500 MiB). Real file: {f['real_items']:,} "
                     f"{f['real_items_source']} x the generated files' mean item size = ~{_size(f['projected_real_gb'])}; "
                     f"projected read time ~{f['projected_real_cpu_seconds']:.0f} s on an idle core "
                     f"(~{f['projected_real_seconds']:.0f} s wall here){old}.")
    lines += ["", f"The old readers (commit {OLD_COMMIT}, quadratic: each item counted the newlines from the start of the text) are "
              "timed at the small sizes only; the issue measured them at 14 / 28 / 57 MB (DPR: 8.7 / 18.5 / 62 s) "
              "and 4.4 / 8.8 / 17.6 MB (WoW: 3.3 / 9.5 / 42 s). Figures from runs on this 2-core machine, "
              "shared with other work (the load averages above): the wall time includes waiting for a core, so "
              "linearity is judged on the CPU time (user + system) of the reading process.", "",
              "![scale](readers_scale.png)", ""]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--formats", default=",".join(REAL), help="formats to run (default all: dpr,wow,psgs,squad); "
                   "the others' rows are kept from the previous results")
    p.add_argument("--sizes", default="64,256,1024", help="MiB of the scale-curve files (default 64,256,1024)")
    p.add_argument("--old-sizes", default="8,16", help="MiB at which the old readers are timed too (default 8,16)")
    p.add_argument("--repeats", type=int, default=3, help="reads per file by the new reader; the best time counts")
    p.add_argument("--out", default=str(ROOT / "runs" / "bench_readers"), help="folder of the generated files")
    p.add_argument("--keep", action="store_true", help="keep the generated files")
    p.add_argument("--child", nargs=4, metavar=("KIND", "IMPL", "PATH", "OLD_DIR"), help=argparse.SUPPRESS)
    p.add_argument("--measure", nargs=4, metavar=("KIND", "IMPL", "PATH", "OLD_DIR"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(*args.child)
    if args.measure:
        return measure(args.measure)
    sizes = [float(s) for s in args.sizes.split(",")]
    old_sizes = [float(s) for s in args.old_sizes.split(",") if s]
    kinds = [k for k in args.formats.split(",") if k]
    unknown = sorted(set(kinds) - set(REAL))
    if unknown:
        raise SystemExit(f"--formats: unknown {', '.join(unknown)}; use some of {', '.join(REAL)}")
    previous = HERE / "readers_results.json"
    old = json.loads(previous.read_text(encoding="utf-8")) if previous.is_file() else {"rows": []}
    load = os.getloadavg()[0]
    rows = bench(kinds, sizes, old_sizes, Path(args.out), args.keep, args.repeats)
    runs = {k: v for k, v in old.get("runs", {}).items() if k not in kinds}
    for k in {r["kind"] for r in old["rows"]} - set(kinds) - set(runs):  # results written before "runs"
        runs[k] = {"load_average": old.get("load_average", [0, 0]), "repeats": old.get("repeats", 1)}
    runs.update({k: {"load_average": [load, os.getloadavg()[0]], "repeats": args.repeats} for k in kinds})
    result = summarise([r for r in old["rows"] if r["kind"] not in kinds] + rows)
    result["runs"] = runs  # per format: 1-minute load at the start and the end of its run, reads per size
    (HERE / "readers_results.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    plot(result, HERE / "readers_scale.png")
    (HERE / "readers_results.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
