"""`megazoo eval leaderboard SUITE.yaml`: run (model, task) pairs, print the table, write results.json
(stable keys), a markdown table, a CSV, a PNG chart and one lm-eval-layout results file per model
(eval/leaderboard_outputs.py), and flag regressions against a previous results.json.

Suite file:

    name: smoke
    out: leaderboard/             # where results.json/.md/.csv/.png and lm_eval/ go
    baseline: old/results.json    # optional: compare and flag regressions
    tolerance: 0.01               # optional: allowed drop (absolute) before a change is a regression
    models:
      - {name: tiny, checkpoint: runs/tiny/checkpoints}   # a megazoo checkpoint
      - {name: ref, hf: exported/}                        # a Hugging Face folder via transformers
    tasks:
      - {name: lambada, path: data/lambada.jsonl}
      - {name: hellaswag, path: data/hellaswag.jsonl, num_fewshot: 2, fewshot_path: data/hs_train.jsonl}
      - {name: wikitext103_megatron, path: data/wiki.test.tokens, stride: 32}   # Megatron's default 32
      # optional: lambada_mode (strict|nonstrict, lambada), seed (per-question few-shot draws)
      - {name: race_gpt3, path: data/RACE/test/high}      # GPT-3's zero-shot RACE (language models)
      - {name: race, path: data/RACE, split: test}        # a task package's registered evaluation

Zero-shot tasks score language models; a task evaluation (eval/registry.py) scores the models of
the kinds it accepts (e.g. `race`: checkpoints fine-tuned on RACE, encoders included), and the
table shows "-" where a model is not of such a kind. The old zero-shot names (eval/task_names.py):
`wikitext` is refused in one line naming `wikitext103_megatron`; `race` is RACE's fine-tuned
evaluation, and a suite whose `race` would score only its language models (written when `race` gave
them zero-shot RACE) is refused in one line naming `race_gpt3`, while a suite with RACE fine-tunes
and language models but no `race_gpt3` gets a warning line. A baseline written before the rename is
read with the new names.

The suite is checked whole before any model is loaded, each problem one line `SUITE:LINE: ...`:
an unknown key (in the suite, a model or a task entry: the nearest valid key is named; a task
entry takes the zero-shot keys above and its registered evaluation's options), a `tolerance`
that is not a finite number from 0 to 1e6 (NaN would switch the regression check off), numbers
out of the bounds of `eval task`'s flags, an unknown task, two models or tasks of one name, and a
model, task file or baseline that does not exist. The results files in `out` follow the output
policy (core/fs/policy.py): they may not be, contain or lie inside an input the suite names, and
the results of an earlier run are replaced only with `--overwrite`, each file atomically once
every score is in.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import yaml

from megazoo.eval.task_names import WIKITEXT

LOWER_IS_BETTER = {"ppl", "adjusted_ppl", "avg_loss"}
HEADLINE = {"lambada": "acc", WIKITEXT: "adjusted_ppl", "hellaswag": "acc_norm"}  # others: acc
PROTOCOL_KEYS = {"n", "stride", "num_fewshot", "tokens"}  # how a task ran, not a score: never a regression


class SuiteError(ValueError):
    pass


# the keys a suite may hold; anything else is refused with the nearest valid key (a typo such as
# `limt:` would otherwise be ignored and the run silently differ from the suite's intent)
SUITE_KEYS = ("name", "out", "baseline", "tolerance", "models", "tasks")
MODEL_KEYS = ("name", "checkpoint", "hf", "max_length")
TASK_KEYS = ("name", "path")
ZERO_SHOT_KEYS = ("num_fewshot", "fewshot_path", "limit", "batch_size", "seed", "stride", "lambada_mode")
MAX_TOLERANCE = 1e6
RESULT_FILES = ("results.json", "results.md", "results.csv", "results.png")


def _bounds() -> dict[str, tuple[int, int]]:
    """A zero-shot task entry's numeric keys and their bounds: the same as `eval task`'s flags."""
    from megazoo.eval import cli

    return {"num_fewshot": cli.NUM_FEWSHOT, "limit": cli.LIMIT, "batch_size": cli.BATCH_SIZE, "stride": cli.STRIDE,
            "seed": cli.SEED}


def _key_line(text: str, trail: tuple) -> int | None:
    """The 1-based line of the key at `trail` (e.g. ("tasks", 0, "limt")) in the YAML `text`."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    for step in trail:
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if k.value == step), None)
            if found is None:
                return None
            if step == trail[-1]:
                return found[0].start_mark.line + 1
            node = found[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
        else:
            return None
    return None


class _Checker:
    """Raises SuiteError `SUITE:LINE: problem` for one suite file."""

    def __init__(self, path: Path, text: str):
        self.path, self.text = path, text

    def fail(self, trail: tuple, problem: str):
        line = _key_line(self.text, trail) if trail else None
        raise SuiteError(f"{self.path}:{line}: {problem}" if line else f"{self.path}: {problem}")

    def keys(self, entry: dict, valid, trail: tuple, where: str) -> None:
        import difflib

        for key in entry:
            if key not in valid:
                near = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.0)
                hint = f"; did you mean `{near[0]}`?" if near else ""
                self.fail((*trail, key), f"unknown key `{key}` in {where}{hint} (valid: {', '.join(valid)})")

    def integer(self, entry: dict, key: str, lo: int, hi: int, trail: tuple, where: str) -> None:
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            self.fail((*trail, key), f"{where} `{key}` must be an integer from {lo} to {hi}, got {value!r}")

    def text_value(self, entry: dict, key: str, trail: tuple, where: str) -> None:
        if not isinstance(entry[key], str) or not entry[key].strip():
            self.fail((*trail, key), f"{where} `{key}` must be a non-empty string, got {entry[key]!r}")


def load_suite(path) -> dict:
    """The suite, checked whole before any model is loaded: every key known (else the nearest is
    named), every number finite and in range, every task known, every file it names present.
    Paths in it are relative to the suite file."""
    import math

    from megazoo.eval.readers.common import LineError, read_text
    from megazoo.eval.registry import evaluations
    from megazoo.eval.suites.runner import TASKS, check_task_options
    from megazoo.eval.task_names import renamed_message

    path = Path(path)
    if not path.is_file():
        raise SuiteError(f"{path}: no such suite file")
    text = read_text(path, "a suite: UTF-8 YAML with `models` and `tasks`", LineError)
    try:
        suite = yaml.safe_load(text) or {}
    except yaml.YAMLError as e:
        from megazoo.core.train.user_errors import yaml_message

        raise SuiteError(yaml_message(path, e)) from None
    if not isinstance(suite, dict):
        raise SuiteError(f"{path}: a suite is a YAML mapping with `models` and `tasks`")
    check = _Checker(path, text)
    check.keys(suite, SUITE_KEYS, (), "the suite")
    for key in ("models", "tasks"):
        if not isinstance(suite.get(key), list) or not suite[key]:
            raise SuiteError(f"{path}: `{key}` must be a non-empty list")
    for key in ("name", "out", "baseline"):
        if suite.get(key) is not None:
            check.text_value(suite, key, (), "the suite's")
    if "tolerance" in suite:
        tol = suite["tolerance"]
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) \
                or not 0 <= tol <= MAX_TOLERANCE:
            check.fail(("tolerance",), f"`tolerance` must be a finite number from 0 to {MAX_TOLERANCE:g} (the drop "
                                       f"allowed before a change is a regression), got {tol!r}")
    names = set()
    for i, m in enumerate(suite["models"]):
        if not isinstance(m, dict) or "name" not in m or not ({"checkpoint", "hf"} & set(m)):
            raise SuiteError(f"{path}: models[{i}] needs `name` and one of `checkpoint` or `hf`")
        where = f"models[{i}]"
        check.keys(m, MODEL_KEYS, ("models", i), where)
        if {"checkpoint", "hf"} <= set(m):
            check.fail(("models", i, "hf"), f"{where} has both `checkpoint` and `hf`; give one")
        for key in ("name", "checkpoint", "hf"):
            if key in m:
                check.text_value(m, key, ("models", i), where)
        if "max_length" in m and m["max_length"] is not None:
            check.integer(m, "max_length", 2, 1 << 20, ("models", i), where)
        if m["name"] in names:
            check.fail(("models", i, "name"), f"two models are named {m['name']!r}; their results would mix")
        names.add(m["name"])
    registered = evaluations()
    known = sorted(set(TASKS) | set(registered))
    names = set()
    for i, t in enumerate(suite["tasks"]):
        if not isinstance(t, dict) or "name" not in t or "path" not in t:
            raise SuiteError(f"{path}: tasks[{i}] needs `name` and `path`")
        where, trail = f"tasks[{i}]", ("tasks", i)
        for key in ("name", "path"):
            check.text_value(t, key, trail, where)
        name = t["name"]
        if name not in known and renamed_message(name):
            check.fail((*trail, "name"), f"{where}: {renamed_message(name)}")
        if name not in known:
            import difflib

            near = difflib.get_close_matches(name, known, n=1, cutoff=0.0)
            check.fail((*trail, "name"), f"{where}: unknown task {name!r}; did you mean `{near[0]}`? "
                                         f"(tasks: {', '.join(known)})")
        if name in names:
            check.fail((*trail, "name"), f"task {name!r} is listed twice; its results would mix")
        names.add(name)
        ev = registered.get(name)
        valid = list(TASK_KEYS) + (list(ZERO_SHOT_KEYS) if name in TASKS else []) + \
            [k for k in (ev.options if ev is not None else {}) if k not in TASK_KEYS + ZERO_SHOT_KEYS]
        check.keys(t, valid, trail, f"{where} ({name})")
        for key, value in t.items():
            if isinstance(value, float) and not math.isfinite(value):
                check.fail((*trail, key), f"{where} `{key}` must be a finite number, got {value!r}")
        if name in TASKS:
            for key, (lo, hi) in _bounds().items():
                if t.get(key) is not None:
                    check.integer(t, key, lo, hi, trail, where)
            try:
                check_task_options(name, t.get("num_fewshot") or 0, t.get("stride"), t.get("lambada_mode"))
            except ValueError as err:
                check.fail(trail + ("name",), f"{where}: {err}")
    base = path.parent
    for entry in suite["models"] + suite["tasks"]:  # paths are relative to the suite file
        for key in ("checkpoint", "hf", "path", "fewshot_path"):
            if key in entry and not os.path.isabs(str(entry[key])):
                entry[key] = str(base / entry[key])
    suite.setdefault("name", path.stem)
    suite["out"] = str(base / suite.get("out", "leaderboard"))
    if suite.get("baseline") and not os.path.isabs(suite["baseline"]):
        suite["baseline"] = str(base / suite["baseline"])
    suite["_text"] = text  # for check_files' line numbers
    return suite


def check_files(path, suite: dict) -> None:
    """Every model folder, task file and baseline the suite names exists (and the baseline is a
    results.json), before any model is loaded; a suite preset with placeholder paths loads, but
    does not run."""
    check = _Checker(Path(path), suite.get("_text", ""))
    for i, m in enumerate(suite["models"]):
        key = "checkpoint" if "checkpoint" in m else "hf"
        if not Path(m[key]).is_dir():
            check.fail(("models", i, key), f"models[{i}] `{key}` {m[key]}: no such folder")
    for i, t in enumerate(suite["tasks"]):
        for key in ("path", "fewshot_path"):
            if t.get(key) is not None and not os.path.exists(t[key]):
                check.fail(("tasks", i, key), f"tasks[{i}] `{key}` {t[key]}: no such file or folder")
    if suite.get("baseline"):
        if not Path(suite["baseline"]).is_file():
            check.fail(("baseline",), f"`baseline` {suite['baseline']}: no such file")
        suite["baseline_results"] = read_baseline(suite["baseline"])


def read_baseline(path) -> dict:
    """A previous results.json (or its `results` mapping): model -> task -> metrics. Problems name
    the file (and the line, for text that is not UTF-8 or not JSON)."""
    from megazoo.eval.readers.common import LineError, read_text

    text = read_text(path, "a baseline results.json from an earlier leaderboard run", LineError)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SuiteError(f"{path}:{e.lineno}: not valid JSON ({e.msg}); the baseline is an earlier results.json") \
            from None
    results = data.get("results", data) if isinstance(data, dict) else data
    if not isinstance(results, dict) or not all(
            isinstance(tasks, dict) and all(isinstance(m, dict) for m in tasks.values()) for tasks in results.values()):
        raise SuiteError(f"{path}: not a leaderboard results.json (expected model -> task -> metrics)")
    from megazoo.eval.task_names import current_name

    # a results.json written before the rename (issue 41) holds `race`/`wikitext`: read as the tasks are named now
    return {model: {current_name(task, metrics): metrics for task, metrics in tasks.items()}
            for model, tasks in results.items()}


def check_outputs(suite_path, suite: dict, overwrite: bool) -> None:
    """The output policy (core/fs/policy.py) for a suite: its results files in `out` must not be,
    contain or lie inside any input it names (the suite, models, task files, the baseline), and
    results of an earlier run are replaced only with --overwrite."""
    from megazoo.core.fs import Declared, PathRole, check_paths

    label = f"`out` of {suite_path}"
    out = Path(suite["out"])
    if out.exists() and not out.is_dir():
        raise SuiteError(f"{suite_path}: `out` {out} is a file; the results go into a folder")
    inputs = [Declared("the suite", str(suite_path), PathRole("input", "file"))]
    if suite.get("baseline"):
        inputs.append(Declared("`baseline`", suite["baseline"], PathRole("input", "file")))
    for m in suite["models"]:
        for key in ("checkpoint", "hf"):
            if key in m:
                inputs.append(Declared(f"model {m['name']} `{key}`", m[key], PathRole("input", "folder")))
    for t in suite["tasks"]:
        for key, value in t.items():  # path, fewshot_path and a task evaluation's files (passages, ...)
            if key != "name" and isinstance(value, str) and value and os.path.exists(value):
                inputs.append(Declared(f"task {t['name']} `{key}`", value, PathRole("input")))
    results = PathRole("output", "prefix", also=lambda p: [p / name for name in RESULT_FILES] + [
        p / path for path in lm_eval_paths(suite)])
    check_paths(inputs, [Declared(label, str(out), results)], overwrite)


def lm_eval_paths(suite: dict) -> list[str]:
    """The lm-eval-layout results files under `out`, one per model: lm_eval/MODEL/results_SUITE.json."""
    from megazoo.eval.leaderboard_outputs import sanitize

    return [f"lm_eval/{sanitize(m['name'])}/results_{sanitize(suite['name'])}.json" for m in suite["models"]]


def _load_model(entry: dict):
    if "hf" in entry:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from megazoo.eval.lm import HFCausalLM

        try:
            model = AutoModelForCausalLM.from_pretrained(entry["hf"], dtype=torch.float32)
            tokenizer = AutoTokenizer.from_pretrained(entry["hf"])
        except OSError as err:
            if err.errno is not None:
                raise  # a real I/O failure keeps its number (a full disk is not the user's mistake)
            # transformers' "does not appear to have a file named ..." carries no errno: the folder is wrong
            raise ValueError(f"{entry['hf']}: transformers cannot load it as a causal LM "
                             f"({str(err).strip().splitlines()[0] if str(err).strip() else 'no reason given'})") \
                from None
        return HFCausalLM(model, tokenizer, max_length=entry.get("max_length"))
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
    """The task's headline metric: a registered evaluation's, else the zero-shot task's."""
    key = _headline_key(task)
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
    """The results.md table: the headline metric per (model, task) and `avg`, the mean of a model's
    0-1 headlines (perplexities left out)."""
    from megazoo.eval.leaderboard_outputs import average

    tasks = sorted({t for m in results.values() for t in m})
    lines = ["| model | " + " | ".join(f"{t} ({_headline_key(t)})" for t in tasks) + " | avg |",
             "|---|" + "---|" * (len(tasks) + 1)]
    for model in sorted(results):
        pairs = [headline(t, results[model][t]) if results[model].get(t) else ("", None) for t in tasks]
        cells = [f"{v:.4f}" if v is not None else "-" for _, v in pairs]
        avg = average(pairs)
        lines.append(f"| {model} | " + " | ".join(cells + [f"{avg:.4f}" if avg is not None else "-"]) + " |")
    return "\n".join(lines) + "\n"


def plot(results: dict, path) -> None:
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
    fig.savefig(path, dpi=100, format="png")  # a path or a binary file
    plt.close(fig)


def model_meta(entry: dict, lm) -> dict:
    """A suite model's metadata for the lm-eval files: its folder, architecture and parameter count
    (counted on the loaded model; None when only task evaluations, which load their own, ran)."""
    meta = {k: entry[k] for k in ("checkpoint", "hf") if k in entry}
    if "checkpoint" in entry:
        from megazoo.zoo.io import model_config

        meta["arch"] = model_config(entry["checkpoint"])[0]
    else:
        config = Path(entry["hf"]) / "config.json"
        meta["arch"] = json.loads(config.read_text()).get("model_type") if config.is_file() else None
    modules = getattr(lm, "chunks", None) or ([lm.model] if getattr(lm, "model", None) is not None else [])
    unique = {id(p): p for m in modules for p in m.parameters()}  # pipeline chunks; tied weights once
    meta["parameters"] = sum(p.numel() for p in unique.values()) if modules else None
    return meta


def scorer(name: str, kind: str, registered: dict) -> tuple[object | None, str | None]:
    """What scores task `name` for a model of `kind`: (a registered task evaluation, or None for
    the zero-shot task of that name, which language models get; and why the model is skipped,
    or None). A registered evaluation and a zero-shot task never share a name (eval/task_names.py)."""
    ev = registered.get(name)
    if ev is not None and kind in ev.kinds:
        return ev, None
    if kind == "lm" and ev is None:
        return None, None
    scores = ", ".join(ev.kinds) if ev is not None else "language models"
    return None, f"a {kind} model; {name} scores {scores}"


def check_old_names(suite_path, suite: dict, kinds: dict[str, str], registered: dict) -> list[str]:
    """`race` in a suite is RACE's fine-tuned evaluation; before the rename (issue 41) it also gave
    language models GPT-3's zero-shot RACE, now `race_gpt3`. A suite whose `race` would score none of
    its models but its language models (a suite written before the rename) is refused in one line
    (SUITE:LINE) before any model is loaded; one that has models `race` scores too gets a warning line
    for its language models, which show "-" under `race` (none when it lists `race_gpt3`). Returns
    the warnings. `kinds`: model name -> model_kind; `registered`: the task evaluations."""
    from megazoo.eval.task_names import RENAMED, renamed_message

    names = {t["name"] for t in suite["tasks"]}
    lms = [model for model, kind in kinds.items() if kind == "lm"]
    warnings = []
    for i, t in enumerate(suite["tasks"]):
        name = t["name"]
        if not lms or name not in RENAMED or name not in registered or RENAMED[name][0] in names:
            continue
        if not any(kind in registered[name].kinds for kind in kinds.values()):
            _Checker(Path(suite_path), suite.get("_text", "")).fail(
                ("tasks", i, "name"), f"tasks[{i}]: {renamed_message(name)}; `{name}` scores checkpoints fine-tuned "
                                      f"on it, and model {lms[0]} is a language model")
        warnings.append(f"{suite_path}: tasks[{i}] `{name}` scores checkpoints fine-tuned on it; the language models "
                        f"({', '.join(lms)}) show \"-\" under it: GPT-3's zero-shot RACE, `{name}` before issue 41, "
                        f"is `{RENAMED[name][0]}`; list it to score them")
    return warnings


def run_leaderboard(suite_path, progress: bool = True, overwrite: bool = False) -> dict:
    """Score every (model, task) pair of the suite and write results.json, results.md and
    results.png into its `out` folder (each atomically; earlier results only with `overwrite`)."""
    from megazoo.eval.leaderboard_outputs import to_unit_scale
    from megazoo.eval.registry import evaluations, model_kind
    from megazoo.eval.suites import run_task

    suite = load_suite(suite_path)
    check_files(suite_path, suite)  # before any model is loaded
    check_outputs(suite_path, suite, overwrite)
    kinds = {entry["name"]: model_kind(entry) for entry in suite["models"]}  # reads configs, loads no model
    registered = evaluations()
    warnings = check_old_names(suite_path, suite, kinds, registered)
    results: dict[str, dict[str, dict]] = {}
    metas: dict[str, dict] = {}
    skipped: list[dict] = []
    for entry in suite["models"]:
        kind = kinds[entry["name"]]
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
            metrics = to_unit_scale(metrics)  # one 0-1 scale for every proportion in every file
            results.setdefault(entry["name"], {})[task["name"]] = {k: metrics[k] for k in sorted(metrics)}
        results.setdefault(entry["name"], {})
        metas[entry["name"]] = model_meta(entry, lm)
    version = _version()
    report = {"suite": suite["name"], "results": results, "regressions": [], "skipped": skipped,
              "models": metas, "megazoo_version": version, "out": suite["out"], "warnings": warnings}
    if suite.get("baseline"):
        report["regressions"] = compare(results, suite["baseline_results"], float(suite.get("tolerance", 0.01)))
    table = markdown(results)
    if report["regressions"]:
        table += "\n**Regressions**\n\n" + "\n".join(
            f"- {r['model']} / {r['task']} / {r['metric']}: {r['old']:.4f} -> {r['new']:.4f}" for r in report["regressions"]) + "\n"
    chart = io.BytesIO()
    plot(results, chart)
    from megazoo.eval import leaderboard_outputs as lo

    entries = {t["name"]: t for t in suite["tasks"]}
    per_model = {name: lo.lm_eval_results(name, tasks, entries, metas[name], version, _higher_is_better)
                 for name, tasks in results.items()}
    report["table"] = lo.table(results, headline)
    # everything is computed before the first file is replaced; each file is replaced atomically
    from megazoo.core.fs import write_bytes_atomic, write_text_atomic

    out = Path(suite["out"])
    out.mkdir(parents=True, exist_ok=True)
    saved = {k: v for k, v in report.items() if k not in ("table", "warnings")}  # those two are printed
    write_text_atomic(out / "results.json", json.dumps(saved, indent=2, sort_keys=True) + "\n")
    write_text_atomic(out / "results.md", table)
    write_text_atomic(out / "results.csv", lo.csv_text(results, lambda t, m: headline(t, m)[0]))
    write_bytes_atomic(out / "results.png", chart.getvalue())
    for entry, rel in zip(suite["models"], lm_eval_paths(suite)):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(out / rel, json.dumps(per_model[entry["name"]], indent=2) + "\n")
    return report


def _higher_is_better(task: str, key: str) -> bool:
    return not _lower_is_better(task, key)


def _version() -> str:
    from megazoo import __version__

    return __version__
