"""`megazoo eval mt-nlg SUITE.yaml`: the zero-, one- and few-shot table of the MT-NLG paper (Smith et al.
2022, "Using DeepSpeed and Megatron to Train Megatron-Turing NLG 530B", arXiv:2201.11990, section 6.1),
run on the models of a suite shaped as eval/suites/presets/mt-nlg.yaml and printed in the paper's layout,
one line per task, with the paper's 530B figures beside it where they can be cited.

What is and is not the paper's own (said here because a number without its source is worse than none):
- tasks and columns: the paper's (LAMBADA, BoolQ, RACE-h, PiQA, HellaSwag, WinoGrande, ANLI-R2, HANS,
  WiC; zero, one and few shot).
- the few-shot k: GPT-3's per-task K (Brown et al. 2020), which MT-NLG says it follows; the MT-NLG
  paper's own counts could not be read when this was written (only the paper's abstract was reachable
  offline), so every k carries `FEW_SHOT_SOURCE`, not the MT-NLG paper. HANS is not a GPT-3 task: no k.
- 530B figures: only those with a source that could be read (Papers with Code's "results from the
  paper": HellaSwag one- and few-shot). The other cells are left empty rather than filled from memory.
- metrics: RACE-h shows `acc_calibrated` (GPT-3's unconditional normalisation, section 2.4, which GPT-3
  uses for RACE) with plain `acc` beside it; HellaSwag `acc_norm`; the others `acc`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from megazoo.eval.task_names import RACE

PAPER = "Smith et al. 2022, arXiv:2201.11990, section 6.1, the zero-/one-/few-shot results table"
FEW_SHOT_SOURCE = ("GPT-3's K per task (Brown et al. 2020, arXiv:2005.14165, the few-shot rows); MT-NLG's own "
                   "counts not verified against arXiv:2201.11990")
PWC = ("Papers with Code, results from arXiv:2201.11990 "
       "(paperswithcode.com/paper/using-deepspeed-and-megatron-to-train): HellaSwag 1-shot 80.2, few-shot 82.4")
COLUMNS = ("zero", "one", "few")
SHOTS = {"zero": 0, "one": 1}  # the few column's k is the task's


@dataclass(frozen=True)
class Row:
    """One task of the paper's table."""

    label: str  # the paper's name
    task: str  # megazoo's task name (eval/suites)
    metrics: tuple[str, ...]  # the first is the one the paper's figure compares with
    few_shot: int | None  # k of the few-shot column (None: unknown)
    reference: dict[str, float] = field(default_factory=dict)  # column -> the paper's 530B figure
    reference_source: str | None = None


ROWS = (
    Row("LAMBADA", "lambada", ("acc",), 15),
    Row("BoolQ", "boolq", ("acc",), 32),
    Row("RACE-h", RACE, ("acc_calibrated", "acc"), 10),
    Row("PiQA", "piqa", ("acc",), 50),
    Row("HellaSwag", "hellaswag", ("acc_norm",), 20, {"one": 0.802, "few": 0.824}, PWC),
    Row("WinoGrande", "winogrande", ("acc",), 50),
    Row("ANLI-R2", "anli", ("acc",), 50),
    Row("HANS", "hans", ("acc",), None),
    Row("WiC", "wic", ("acc",), 32),
)
BY_TASK = {r.task: r for r in ROWS}


def check_suite(suite_path, suite: dict, columns) -> list[tuple[Row, dict]]:
    """The suite's tasks as (row, entry) in the paper's order, refused (ValueError, one line) before any
    model is loaded when a task is not in the paper's table or a column cannot run: one- and few-shot
    need a few-shot file (LAMBADA draws from the evaluated file), the few-shot column a k (a task whose
    k is unknown here, HANS, may leave it out: its few-shot cell stays empty)."""
    from megazoo.eval.suites.runner import check_task_options
    from megazoo.eval.task_names import renamed_message

    unknown = [t["name"] for t in suite["tasks"] if t["name"] not in BY_TASK]
    if unknown and renamed_message(unknown[0]):
        raise ValueError(f"{suite_path}: {renamed_message(unknown[0])}")
    if unknown:
        raise ValueError(f"{suite_path}: task {unknown[0]!r} is not in the MT-NLG table "
                         f"(tasks: {', '.join(BY_TASK)}); remove it or run `megazoo eval leaderboard`")
    entries = {t["name"]: t for t in suite["tasks"]}
    for name, entry in entries.items():
        k = entry.get("num_fewshot") or 0
        if "few" in columns and not k and BY_TASK[name].few_shot is not None:
            raise ValueError(f"{suite_path}: task {name} has no `num_fewshot` for the few-shot column; set it "
                             f"(preset: eval/suites/presets/mt-nlg.yaml) or drop `few` from --columns")
        shots = [SHOTS[c] for c in columns if c != "few"] + ([k] if "few" in columns and k else [])
        if name != "lambada" and any(shots) and not entry.get("fewshot_path"):
            raise ValueError(f"{suite_path}: task {name} has no `fewshot_path` (its train split) for the "
                             f"one- and few-shot columns; set it or run with --columns zero")
        for n in shots:
            check_task_options(name, n, entry.get("stride"), entry.get("lambada_mode"))
    return [(r, entries[r.task]) for r in ROWS if r.task in entries]


def run_mtnlg(suite_path, columns=COLUMNS, limit: int | None = None, batch_size: int | None = None,
              progress: bool = True) -> dict:
    """{model: {task: {column: metrics (with num_fewshot)}}} for every model and task of the suite."""
    from megazoo.eval.leaderboard import _load_model, check_files, load_suite
    from megazoo.eval.registry import model_kind
    from megazoo.eval.suites.runner import run_task

    columns = [c for c in COLUMNS if c in columns]
    suite = load_suite(suite_path)
    check_files(suite_path, suite)
    rows = check_suite(suite_path, suite, columns)
    for entry in suite["models"]:
        if model_kind(entry) != "lm":
            raise ValueError(f"{suite_path}: model {entry['name']} is not a language model; the MT-NLG table "
                             f"scores language models")
    results: dict[str, dict] = {}
    for entry in suite["models"]:
        lm = _load_model(entry)
        for row, task in rows:
            cells = results.setdefault(entry["name"], {}).setdefault(row.task, {})
            for column in columns:
                k = (task.get("num_fewshot") or 0) if column == "few" else SHOTS[column]
                if column == "few" and not k:
                    continue  # HANS without a k: no few-shot cell
                metrics = run_task(lm, row.task, task["path"], k, task.get("fewshot_path"),
                                   limit if limit is not None else task.get("limit"),
                                   batch_size=batch_size or task.get("batch_size", 8), seed=task.get("seed", 1234),
                                   progress=progress, stride=task.get("stride"), lambada_mode=task.get("lambada_mode"))
                metrics.pop("predictions", None)
                cells[column] = {key: metrics[key] for key in sorted(metrics)}
    return results


def _cell(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(results: dict, columns=COLUMNS) -> str:
    """The paper's layout in markdown: one block per model, a line per task (and per extra metric),
    our zero/one/few-shot scores, then the paper's 530B figures (`-`: not run, or no cited figure)."""
    columns = [c for c in COLUMNS if c in columns]
    out = []
    for model, tasks in results.items():
        head = ["task", "metric"] + [f"{c}-shot" for c in columns] + [f"530B {c}-shot" for c in columns]
        out += [f"### {model}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for row in ROWS:
            if row.task not in tasks:
                continue
            cells = tasks[row.task]
            for i, metric in enumerate(row.metrics):
                ours = []
                for c in columns:
                    value = _cell(cells.get(c, {}).get(metric))
                    k = cells.get(c, {}).get("num_fewshot")
                    ours.append(f"{value} (k={k})" if c == "few" and k is not None else value)
                paper = [_cell(row.reference.get(c)) if i == 0 else "" for c in columns]
                out.append("| " + " | ".join([row.label if i == 0 else "", metric, *ours, *paper]) + " |")
        out.append("")
    sources = sorted({r.reference_source for r in ROWS if r.reference_source})
    out.append(f"Layout: {PAPER}. Few-shot k: {FEW_SHOT_SOURCE}.")
    out += [f"530B figures: {s}." for s in sources]
    out.append("Other 530B cells are empty: the paper's table could not be read to cite them.")
    return "\n".join(out) + "\n"
