"""`megazoo quickstart --fast` (the pretraining, export and summary only) leaves a short report:
the layout, the figures, the loss plot inline by a relative path, the seconds of each stage and the
next commands; a bad argument is one line and exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys


def test_fast_quickstart_leaves_a_short_report(tmp_path):
    out = tmp_path / "qs"
    done = subprocess.run([sys.executable, "-m", "megazoo", "quickstart", "--fast", "--steps", "2", "--out", str(out),
                           "--set", "train.eval_iters=1"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = (out / "summary.md").read_text()
    assert "## 1. Pretraining a tiny GPT at tp=2 x pp=2" in summary and "2 steps of 16 x 128 tokens" in summary
    assert "![loss](loss.png)" in summary and (out / "loss.png").exists()
    assert "transformers logits differ from megazoo's by at most" in summary
    assert "babbles" in summary and "`--fast`" in summary and "## 2." not in summary
    assert "megazoo plan mt-nlg-530b" in summary and "megazoo train gpt-tiny --set parallel.tp=2" in summary
    assert str(tmp_path) not in summary.split("## Next")[0]  # the report's own paths are relative
    seconds = json.loads((out / "stages.json").read_text())
    assert set(seconds["wall"]) == set(seconds["cpu"]) == {"pretraining", "export"}
    assert all(s > 0 for s in seconds["wall"].values()) and seconds["cpu"]["pretraining"] > 0
    assert not (out / "smollm2").exists() and not (out / "leaderboard").exists()
    sample = next(line for line in summary.splitlines() if line.startswith("- sample"))
    assert "temperature 0.8" in sample and "'The Python standard library" in sample


def test_bad_steps_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "megazoo", "quickstart", "--fast", "--steps", "0", "--out",
                           str(tmp_path / "qs")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("megazoo quickstart: error:"), done.stderr
    assert not (tmp_path / "qs").exists()


def test_task_step_is_skipped_with_the_reason_when_the_word_list_is_missing(tmp_path, monkeypatch):
    import megazoo.tasks.biomed.generate as biomed_generate
    from megazoo.quickstart_report import task_lines
    from megazoo.quickstart_task import run_task_stage

    monkeypatch.setattr(biomed_generate, "DICTIONARY", str(tmp_path / "nowhere.dic"))
    task = run_task_stage(tmp_path)
    assert task == {"skipped": f"the medical word list {tmp_path / 'nowhere.dic'} is missing "
                               "(apt-get install hunspell-en-med)"}
    assert not (tmp_path / "task").exists()
    assert task_lines(task)[2].startswith("Skipped: the medical word list")


def test_task_lines_show_f1_before_and_after():
    from megazoo.quickstart_report import task_lines

    task = {"title": "biomedical NER", "before_f1": 0.092, "after_f1": 0.8125, "precision": 0.8, "recall": 0.825,
            "steps": 40, "sentences": {"train": 320, "dev": 32, "test": 96}, "train_seconds": 61.0,
            "settings": {"micro_batch": 16, "lr": 1e-4}}
    text = "\n".join(task_lines(task))
    assert "| MiniLM-L6 (imported with `megazoo import-hf`) | 0.092 | **0.812** |" in text
    assert "320 training, 96 test sentences" in text and "40 steps of 16 sentences (lr 0.0001, 61 s)" in text
