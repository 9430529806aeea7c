"""The main job and the README: the README's first lines run on a fresh copy of the repository
(a new virtual environment, then the quickstart), and Ctrl-C stops every rank cleanly."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> tuple[str, str]:
    """The two commands of the README's first code block: (main job, tests)."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines() if line.strip()]
    assert len(lines) == 2, f"the README's first block must hold exactly two commands, found {lines}"
    return lines[0], lines[1]


def test_readme_starts_with_the_two_commands():
    main_job, tests = readme_commands()
    assert "megazoo quickstart" in main_job and main_job.startswith("./scripts/setup.sh")
    assert "pytest" in tests and tests.startswith("./scripts/setup.sh")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./scripts/setup.sh" in ci and tests.split("&&", 1)[1].strip().split(" -q")[0] in ci


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.stat().st_size > 0):
        assert proc.poll() is None, f"the run ended early with code {proc.returncode}"
        assert time.monotonic() < deadline, f"{path} did not appear within {timeout:.0f}s"
        time.sleep(0.2)


def _session(sid: int) -> list[str]:
    """The live processes of a session: `ps` lines, zombies (exited, waiting to be reaped) left out."""
    lines = subprocess.run(["ps", "-o", "pid=,stat=,args=", "-s", str(sid)], capture_output=True,
                           text=True).stdout.strip().splitlines()
    return [line for line in lines if line.split()[1][0] != "Z"]


def _still_alive(sid: int, grace: float = 10.0) -> list[str]:
    """The session's processes still running once those already exiting have finished: a process
    shown as `[python]` has released its memory and is inside exit (under load that can take a moment
    after its parent returned), so it is waited for, up to `grace` seconds; any other is reported."""
    deadline = time.monotonic() + grace
    while True:
        alive = _session(sid)
        exiting = [line for line in alive if line.split(None, 2)[2].startswith("[")]
        if len(exiting) < len(alive) or not exiting or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)  # polling the condition, not a fixed wait


def test_ctrl_c_stops_every_rank_and_says_where_the_run_is(tmp_path):
    out = tmp_path / "qs"
    cmd = [sys.executable, "-m", "megazoo", "quickstart", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for(out / "metrics.jsonl", proc, timeout=300)  # training has started on all ranks
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err[-2000:]
    assert took < 20, f"stopping took {took:.1f}s"
    assert f"The partial run is in {out}" in err
    assert "Traceback" not in err, err[-2000:]
    leftover = _still_alive(proc.pid)
    assert not leftover, f"processes of the run still alive: {leftover}"


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a new virtual environment (about 70 s), then the full default quickstart (about 150 s on 2 quiet cores)
def test_readme_main_job_on_a_fresh_copy(tmp_path):
    """A fresh copy of the tracked files, the README's first command verbatim: set-up in a new
    virtual environment, then the quickstart (the full default). Its promises are checked from the
    run directory: the tiny model's, then SmolLM2 at tp=2 equal to transformers, the leaderboard
    ranking SmolLM2 above the tiny model on both tasks, and the task step."""
    main_job, tests = readme_commands()
    copy = tmp_path / "megazoo"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # as on machines that set it: no bytecode is written at import
    done = subprocess.run(["bash", "-c", main_job], cwd=copy, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # so the bytecode is set-up's, for the environment and the repository (without it every process
    # compiles torch's sources again)
    cached = subprocess.run([str(copy / ".venv" / "bin" / "python"), "-c",
                             "import importlib.util as u, torch, transformers, megazoo.core.nn.attention as a; "
                             "print('\\n'.join(u.cache_from_source(m.__file__) for m in (torch, transformers, a)))"],
                            cwd=copy, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert len(cached) == 3 and all(Path(c).is_file() for c in cached), cached
    (run,) = list((copy / "runs").glob("quickstart-*"))
    summary = (run / "summary.md").read_text()
    assert "transformers logits differ from megazoo's by at most" in summary
    assert (run / "loss.png").stat().st_size > 5000 and (run / "hf" / "config.json").exists()
    train = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    train = [m["loss"] for m in train if m.get("split", "train") == "train" and "loss" in m]
    tenth = len(train) // 10
    first, last = sum(train[:tenth]) / tenth, sum(train[-tenth:]) / tenth
    assert last <= 0.7 * first, f"loss fell from {first:.3f} to {last:.3f}, less than 30%"
    valid = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if '"valid"' in line]
    assert valid and valid[-1]["ppl"] > 1.0
    assert "identical, token for token" in summary and "![leaderboard](leaderboard/results.png)" in summary
    smol = yaml.safe_load((run / "smollm2" / "model.yaml").read_text())  # imported at tp=2, KV heads padded
    assert smol["parallel"]["tp"] == 2 and smol["heads_padded_from"] == {"num_heads": 9, "num_kv_heads": 3}
    board = json.loads((run / "leaderboard" / "results.json").read_text())["results"]
    for task, key in (("lambada", "acc"), ("hellaswag", "acc_norm")):
        assert board["smollm2-135m"][task][key] > board["tiny-gpt"][task][key], (task, board)
    assert (run / "leaderboard" / "results.png").stat().st_size > 5000
    table = (run / "leaderboard" / "results.md").read_text()
    assert "| smollm2-135m |" in table and "| tiny-gpt |" in table and "lambada (acc)" in table
    suite = yaml.safe_load((run / "leaderboard" / "suite.yaml").read_text())
    assert all(not str(m["checkpoint"]).startswith("/") for m in suite["models"])  # the run folder can move
    if "## 4. A task package: " in summary:  # needs Debian's hunspell-en-med, which setup.sh installs when it can
        before, after = map(float, re.search(r"\| MiniLM-L6 .*\| ([0-9.]+) \| \*\*([0-9.]+)\*\* \|", summary).groups())
        assert after > before + 0.3, (before, after)
    stages = json.loads((run / "stages.json").read_text())
    assert set(stages["wall"]) == {"pretraining", "export", "smollm2", "leaderboard", "task"}
    # the test command's set-up is the same script; its pytest finds the suite in the fresh copy
    setup_part, pytest_part = tests.split("&&", 1)
    collect = subprocess.run(["bash", "-c", f"{setup_part} && {pytest_part.strip()} --collect-only"], cwd=copy,
                             env=env, capture_output=True, text=True, timeout=1800)
    assert collect.returncode == 0 and re.search(r"\d+ tests collected", collect.stdout), collect.stdout[-2000:]
