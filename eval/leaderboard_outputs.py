"""What `megazoo eval leaderboard` shows and writes beside results.json: the printed table (models x
tasks, the headline metric each, an average column), one results file per model in lm-eval's
results layout, a CSV of every metric and a bar chart.

lm-eval layout: lm-eval's `--output_path` gets one `results_*.json` per model, and scripts written
for it read `results[task]["<metric>,none"]` and `"<metric>_stderr,none"`, plus `versions`, `n-shot`,
`configs`, `config` (the model and its arguments) and `higher_is_better`. The leaderboard writes
exactly that, one file per model at `OUT/lm_eval/<model>/results_<suite>.json`, so those scripts
read it unchanged (a `glob("**/results_*.json")` finds them).

Standard errors: the binomial one, sqrt(p(1-p)/(n-1)), for metrics that average a 0/1 outcome per
example (acc, acc_norm, accuracy, exact_match, top-k accuracy): lm-eval's `mean_stderr` of 0/1
scores reduces to exactly that. Every other metric (perplexity, F1, BLEU, AUC, ...) gets "N/A",
which is what lm-eval writes when it computes no standard error (`bootstrap_iters=0`).

Scale: every proportion is written on the 0-1 scale; a proportion metric reported as a percentage
(above 1) is divided by 100. Perplexities, losses and counts keep their own units.
"""

from __future__ import annotations

import csv
import io
import math
import re

BINOMIAL = re.compile(r"^(acc(_norm|_calibrated)?|accuracy(_\w+)?|strict_accuracy|exact_match|top\d+(_acc)?)$")
PROPORTION = re.compile(r"^(acc\w*|accuracy\w*|strict_accuracy|exact_match|f1|precision|recall|top\d+(_acc)?"
                        r"|bleu|rouge\w*|meteor|kf1|knowledge_f1|auc|control_rate|distinct_\d+|repeat_\d+)$")
NOT_SCORES = {"n", "stride", "num_fewshot", "tokens"}  # how a task ran; in the CSV, never in averages
NA = "N/A"  # lm-eval's marker for a standard error it did not compute
VERSION = 1  # the leaderboard's own task versions: bump when a task's scoring changes


def to_unit_scale(metrics: dict) -> dict:
    """`metrics` with every proportion on the 0-1 scale (a percentage above 1 divided by 100)."""
    out = {}
    for key, value in metrics.items():
        if PROPORTION.match(key) and isinstance(value, (int, float)) and not isinstance(value, bool) \
                and 1.0 < value <= 100.0:
            value = value / 100.0
        out[key] = value
    return out


def binomial_stderr(p: float, n: int) -> float:
    """lm-eval's standard error of a mean of n 0/1 outcomes with mean p: sqrt(p(1-p)/(n-1))."""
    if n < 2:
        return float("nan")
    return math.sqrt(p * (1.0 - p) / (n - 1))


def stderr(metric: str, value, n) -> float | str:
    """The standard error of one metric: binomial for per-example 0/1 averages, else "N/A"."""
    if BINOMIAL.match(metric) and isinstance(value, (int, float)) and isinstance(n, int) and n >= 2:
        return binomial_stderr(float(value), n)
    return NA


def _scores(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items()
            if k not in NOT_SCORES and isinstance(v, (int, float)) and not isinstance(v, bool)}


def lm_eval_results(model: str, tasks: dict, task_entries: dict, meta: dict, version: str,
                    higher_is_better) -> dict:
    """One model's results in lm-eval's results layout. `tasks`: task -> metrics (0-1 scale);
    `task_entries`: task -> the suite's task entry; `meta`: the model's metadata (checkpoint, arch,
    parameters); `higher_is_better(task, metric) -> bool`."""
    results, configs, versions, n_shot, better, samples = {}, {}, {}, {}, {}, {}
    for task, metrics in tasks.items():
        n = metrics.get("n")
        row = {"alias": task}
        for key, value in _scores(metrics).items():
            row[f"{key},none"] = value
            row[f"{key}_stderr,none"] = stderr(key, value, n)
        results[task] = row
        entry = task_entries.get(task, {})
        shots = int(entry.get("num_fewshot") or metrics.get("num_fewshot") or 0)
        n_shot[task] = shots
        versions[task] = VERSION
        better[task] = {key: bool(higher_is_better(task, key)) for key in _scores(metrics)}
        if isinstance(n, int):
            samples[task] = {"original": n, "effective": n}
        configs[task] = {"task": task, "num_fewshot": shots, "dataset_path": entry.get("path"),
                         "metric_list": [{"metric": k, "higher_is_better": better[task][k]} for k in better[task]],
                         "metadata": {"version": VERSION},
                         **{k: v for k, v in entry.items() if k not in ("name", "path", "num_fewshot")}}
    source = meta.get("checkpoint") or meta.get("hf")
    return {"results": results, "configs": configs, "versions": versions, "n-shot": n_shot,
            "higher_is_better": better, "n-samples": samples,
            "config": {"model": "megazoo" if meta.get("checkpoint") else "hf",
                       "model_args": f"pretrained={source}", "model_num_parameters": meta.get("parameters"),
                       "arch": meta.get("arch"), "checkpoint": source, "bootstrap_iters": 0},
            "model_name": model, "model_name_sanitized": sanitize(model), "megazoo_version": version}


def sanitize(name: str) -> str:
    """A model name as a folder name (lm-eval's `model_name_sanitized` idea: no path separators)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "__", name) or "model"


def csv_text(results: dict, headline_key) -> str:
    """Every (model, task, metric) as a CSV row: model,task,metric,value,stderr,n,headline."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["model", "task", "metric", "value", "stderr", "n", "headline"])
    for model in sorted(results):
        for task in sorted(results[model]):
            metrics = results[model][task]
            n = metrics.get("n")
            for key, value in sorted(_scores(metrics).items()):
                err = stderr(key, value, n)
                w.writerow([model, task, key, f"{value:.6g}", "" if err == NA else f"{err:.6g}",
                            n if n is not None else "", int(key == headline_key(task, metrics))])
    return buf.getvalue()


def average(cells: list[tuple[str, float | None]]) -> float | None:
    """The mean of the proportion headlines of one model (perplexities have no common scale with
    accuracies and are left out); None when there is none."""
    values = [v for key, v in cells if v is not None and PROPORTION.match(key)]
    return sum(values) / len(values) if values else None


def table(results: dict, headline) -> str:
    """The printed table: one row per model, one column per task (its headline metric), and `avg`:
    the mean of the 0-1 headlines. `headline(task, metrics) -> (key, value)`."""
    tasks = sorted({t for m in results.values() for t in m})
    header = ["model"] + [f"{t} ({headline(t, next(r[t] for r in results.values() if t in r))[0]})" for t in tasks] \
        + ["avg (0-1 headlines)"]
    rows = []
    for model in sorted(results):
        cells = [headline(t, results[model][t]) if t in results[model] else ("", None) for t in tasks]
        avg = average(cells)
        rows.append([model] + [f"{v:.4f}" if v is not None else "-" for _, v in cells]
                    + [f"{avg:.4f}" if avg is not None else "-"])
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows]) + "\n"
