"""`megazoo eval leaderboard SUITE.yaml`: run (model, task) pairs, write results.json (stable keys),
a markdown table and a PNG chart, and flag regressions against a previous results.json.

Suite file:

    name: smoke
    out: leaderboard/             # where results.json, results.md and results.png go
    baseline: old/results.json    # optional: compare and flag regressions
    tolerance: 0.01               # optional: allowed drop (absolute) before a change is a regression
    models:
      - {name: tiny, checkpoint: runs/tiny/checkpoints}   # a megazoo checkpoint
      - {name: ref, hf: exported/}                        # a Hugging Face folder via transformers
    tasks:
      - {name: lambada, path: data/lambada.jsonl}
      - {name: hellaswag, path: data/hellaswag.jsonl, num_fewshot: 2, fewshot_path: data/hs_train.jsonl}
      - {name: wikitext, path: data/wiki.test.tokens, stride: 32}   # `stride`: Megatron's default 32
      # optional: lambada_mode (strict|nonstrict, lambada), seed (per-question few-shot draws)
      - {name: race, path: data/RACE, split: test}        # a task package's registered evaluation

Zero-shot tasks score language models; a task evaluation (eval/registry.py) scores the models of
the kinds it accepts (e.g. `race`: checkpoints fine-tuned on RACE, encoders included), and the
table shows "-" where a model is not of such a kind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

LOWER_IS_BETTER = {"ppl", "adjusted_ppl", "avg_loss"}
HEADLINE = {"lambada": "acc", "wikitext": "adjusted_ppl", "hellaswag": "acc_norm"}  # others: acc
PROTOCOL_KEYS = {"n", "stride", "num_fewshot", "tokens"}  # how a task ran, not a score: never a regression


class SuiteError(ValueError):
    pass


def load_suite(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise SuiteError(f"{path}: no such suite file")
    try:
        suite = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        from megazoo.core.train.user_errors import yaml_message

        raise SuiteError(yaml_message(path, e)) from None
    except UnicodeDecodeError:
        raise SuiteError(f"{path}: not a text file (a suite is UTF-8 YAML)") from None
    if not isinstance(suite, dict):
        raise SuiteError(f"{path}: a suite is a YAML mapping with `models` and `tasks`")
    for key in ("models", "tasks"):
        if not isinstance(suite.get(key), list) or not suite[key]:
            raise SuiteError(f"{path}: `{key}` must be a non-empty list")
    for i, m in enumerate(suite["models"]):
        if not isinstance(m, dict) or "name" not in m or not ({"checkpoint", "hf"} & set(m)):
            raise SuiteError(f"{path}: models[{i}] needs `name` and one of `checkpoint` or `hf`")
    for i, t in enumerate(suite["tasks"]):
        if not isinstance(t, dict) or "name" not in t or "path" not in t:
            raise SuiteError(f"{path}: tasks[{i}] needs `name` and `path`")
    base = path.parent
    for entry in suite["models"] + suite["tasks"]:  # paths are relative to the suite file
        for key in ("checkpoint", "hf", "path", "fewshot_path"):
            if key in entry and not os.path.isabs(str(entry[key])):
                entry[key] = str(base / entry[key])
    suite.setdefault("name", path.stem)
    suite["out"] = str(base / suite.get("out", "leaderboard"))
    if suite.get("baseline") and not os.path.isabs(suite["baseline"]):
        suite["baseline"] = str(base / suite["baseline"])
    return suite


def _load_model(entry: dict):
    if "hf" in entry:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from megazoo.eval.lm import HFCausalLM

        model = AutoModelForCausalLM.from_pretrained(entry["hf"], dtype=torch.float32)
        return HFCausalLM(model, AutoTokenizer.from_pretrained(entry["hf"]), max_length=entry.get("max_length"))
    from megazoo.eval.loading import load_lm

    return load_lm(entry["checkpoint"], max_length=entry.get("max_length"))


def _headline_key(task: str) -> str:
    from megazoo.eval.registry import evaluations

    registered = evaluations().get(task)
    return registered.headline if registered is not None else HEADLINE.get(task, "acc")


def _lower_is_better(task: str, key: str) -> bool:
    from megazoo.eval.registry import evaluations

    registered = evaluations().get(task)
    if registered is not None and key == registered.headline:
        return not registered.higher_is_better
    return key in LOWER_IS_BETTER


def headline(task: str, metrics: dict) -> tuple[str, float]:
    """The task's headline metric: a registered evaluation's, or (for the zero-shot task of the same
    name that a language model gets, e.g. RACE's `acc`) the zero-shot one."""
    key = _headline_key(task)
    if key not in metrics:
        key = HEADLINE.get(task, "acc")
    return key, float(metrics[key])


def compare(results: dict, baseline: dict, tolerance: float) -> list[dict]:
    """Every (model, task, metric) that got worse than the baseline by more than `tolerance`."""
    regressions = []
    for model, tasks in results.items():
        for task, metrics in tasks.items():
            old = baseline.get(model, {}).get(task)
            if not old:
                continue
            for key, value in metrics.items():
                if key not in old or not isinstance(value, (int, float)) or key in PROTOCOL_KEYS:
                    continue
                lower = _lower_is_better(task, key)
                worse = (value - old[key]) if lower else (old[key] - value)
                if lower:
                    worse = worse / max(abs(old[key]), 1e-12)  # relative for perplexities
                if worse > tolerance:
                    regressions.append({"model": model, "task": task, "metric": key, "old": old[key], "new": value})
    return regressions


def markdown(results: dict) -> str:
    tasks = sorted({t for m in results.values() for t in m})
    lines = ["| model | " + " | ".join(f"{t} ({_headline_key(t)})" for t in tasks) + " |",
             "|---|" + "---|" * len(tasks)]
    for model in sorted(results):
        cells = []
        for t in tasks:
            m = results[model].get(t)
            cells.append(f"{headline(t, m)[1]:.4f}" if m else "-")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({t for m in results.values() for t in m})
    models = sorted(results)
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.2 * len(tasks), 3.2), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        values = [headline(task, results[m][task])[1] if task in results[m] else 0.0 for m in models]
        ax.bar(range(len(models)), values, color="tab:blue")
        ax.set_xticks(range(len(models)), models, rotation=30, ha="right")
        ax.set_title(f"{task} ({_headline_key(task)})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def zero_shot_tasks() -> set[str]:
    from megazoo.eval.suites import TASKS

    return set(TASKS)


def scorer(name: str, kind: str, registered: dict) -> tuple[object | None, str | None]:
    """What scores task `name` for a model of `kind`: (a registered task evaluation, or None for
    the zero-shot task of that name, which language models get; and why the model is skipped,
    or None). `race` on a language model is the zero-shot RACE task, on a RACE fine-tune its
    registered evaluation."""
    ev = registered.get(name)
    if ev is not None and kind in ev.kinds:
        return ev, None
    if kind == "lm" and (ev is None or name in zero_shot_tasks()):
        return None, None
    scores = ", ".join(ev.kinds) if ev is not None else "language models"
    return None, f"a {kind} model; {name} scores {scores}"


def run_leaderboard(suite_path, progress: bool = True) -> dict:
    from megazoo.eval.registry import evaluations, model_kind
    from megazoo.eval.suites import run_task

    suite = load_suite(suite_path)
    registered = evaluations()
    results: dict[str, dict[str, dict]] = {}
    skipped: list[dict] = []
    for entry in suite["models"]:
        kind = model_kind(entry)
        lm = None  # loaded on the first zero-shot task: an encoder never needs it
        for task in suite["tasks"]:
            ev, why = scorer(task["name"], kind, registered)
            if why is not None:
                skipped.append({"model": entry["name"], "task": task["name"], "why": why})
                continue
            if ev is not None:
                if "checkpoint" not in entry:
                    raise SuiteError(f"model {entry['name']}: task {task['name']} needs a megazoo `checkpoint`")
                metrics = ev.run(entry["checkpoint"], task["path"], task)
            else:
                lm = lm or _load_model(entry)
                metrics = run_task(lm, task["name"], task["path"], task.get("num_fewshot", 0), task.get("fewshot_path"),
                                   task.get("limit"), batch_size=task.get("batch_size", 8), progress=progress,
                                   seed=task.get("seed", 1234), stride=task.get("stride"),
                                   lambada_mode=task.get("lambada_mode"))
                metrics.pop("predictions", None)
            results.setdefault(entry["name"], {})[task["name"]] = {k: metrics[k] for k in sorted(metrics)}
        results.setdefault(entry["name"], {})
    out = Path(suite["out"])
    out.mkdir(parents=True, exist_ok=True)
    report = {"suite": suite["name"], "results": results, "regressions": [], "skipped": skipped}
    if suite.get("baseline"):
        baseline = json.loads(Path(suite["baseline"]).read_text())
        report["regressions"] = compare(results, baseline.get("results", baseline), float(suite.get("tolerance", 0.01)))
    (out / "results.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    table = markdown(results)
    if report["regressions"]:
        table += "\n**Regressions**\n\n" + "\n".join(
            f"- {r['model']} / {r['task']} / {r['metric']}: {r['old']:.4f} -> {r['new']:.4f}" for r in report["regressions"]) + "\n"
    (out / "results.md").write_text(table)
    plot(results, out / "results.png")
    return report
