"""The quickstart's leaderboard: the tiny model and SmolLM2 scored zero-shot through the harness
(`megazoo eval leaderboard`) on two files generated from the embedded corpus in official formats,
LAMBADA (last-word accuracy) and HellaSwag (4-way multiple choice). The suite file, results.json,
results.md and results.png are left in run_dir/leaderboard/, so the same table can be rerun with
`megazoo eval leaderboard run_dir/leaderboard/suite.yaml`.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

TASKS = ("lambada", "hellaswag")


def write_suite(board_dir: Path, models: dict[str, Path], n: int, seed: int = 0) -> Path:
    """Generate the task files and write suite.yaml (paths relative to it); return its path."""
    from megazoo.eval.corpus_tasks import corpus_task_files

    board_dir.mkdir(parents=True, exist_ok=True)
    files = corpus_task_files(board_dir / "data", n=n, seed=seed)

    def rel(p: Path) -> str:  # the run directory can be moved or copied whole
        return os.path.relpath(Path(p).resolve(), board_dir.resolve())

    suite = {"name": "quickstart", "out": ".",
             "models": [{"name": name, "checkpoint": rel(path)} for name, path in models.items()],
             "tasks": [{"name": t, "path": rel(files[t]), "batch_size": 8} for t in TASKS]}
    path = board_dir / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def ranking(results: dict) -> dict[str, list[str]]:
    """task -> model names, best first, by the task's headline metric."""
    from megazoo.eval.leaderboard import _lower_is_better, headline

    out = {}
    for task in TASKS:
        scored = [(headline(task, r[task])[1], name) for name, r in results.items() if task in r]
        key = headline(task, next(r[task] for r in results.values() if task in r))[0] if scored else None
        out[task] = [name for _, name in sorted(scored, reverse=not _lower_is_better(task, key))] if scored else []
    return out


def run_board_stage(run_dir: Path, models: dict[str, Path], n: int = 16) -> dict:
    """Score `models` (name -> megazoo checkpoint) and return the leaderboard report with the
    ranking and the paths of its table and chart."""
    from megazoo.eval.leaderboard import run_leaderboard

    board_dir = run_dir / "leaderboard"
    suite = write_suite(board_dir, models, n)
    report = run_leaderboard(suite, progress=False)
    report["ranking"] = ranking(report["results"])
    report["table"] = board_dir / "results.md"
    report["chart"] = board_dir / "results.png"
    report["n"] = n
    return report
