"""Issue #41 point 7, small mends: a warning with its reason when a trained vocabulary is smaller
than asked; MFU never printed above 100% (capped and explained); a quiet exit on a closed pipe;
`--help` exits 0 for every command and task; MEGAZOO_DEBUG=1 shows the traceback behind caught errors."""

import json
import math
import re
import subprocess
import sys
import warnings

import pytest

from megazoo.cli import COMMANDS, main
from megazoo.core.train.flops import capped_mfu, percent

TEXT = "the quick brown fox jumps over the lazy dog\nhello world again and again\n"


# --- a trained vocabulary smaller than asked ------------------------------------------------------
def test_small_vocabulary_warns_with_the_reason(tmp_path, capsys):
    (tmp_path / "t.txt").write_text(TEXT)
    out = tmp_path / "tok"
    assert main(["tokenizer", "train", "--kind", "wordpiece", "--input", str(tmp_path / "t.txt"),
                 "--vocab-size", "8000", "--out", str(out), "--quiet"]) == 0
    got = json.loads((out / "megazoo_tokenizer.json").read_text())["trained_vocab_size"]
    assert 5 < got < 8000
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("megazoo tokenizer train: warning: ")
    assert f"has {got:,} tokens, not the 8,000 asked for" in err[0] and "--min-frequency 2" in err[0]
    assert f"model.vocab_size={got}" in err[0]


def test_small_vocabulary_warns_through_the_api(tmp_path):
    from megazoo.core.data.tokenizer_train import VocabularyShortfall, train_tokenizer

    (tmp_path / "t.txt").write_text(TEXT * 3)
    with pytest.warns(VocabularyShortfall, match="no more merges"):
        train_tokenizer("bpe", [tmp_path / "t.txt"], 2000, tmp_path / "bpe", min_frequency=1, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VocabularyShortfall)  # the asked size exactly: no warning
        train_tokenizer("wordpiece", [tmp_path / "t.txt"], 12, tmp_path / "wp", progress=False)


# --- MFU ---------------------------------------------------------------------------------------------
def test_mfu_is_capped_and_explained():
    assert capped_mfu(5e11, 1e12) == (0.5, None)
    value, why = capped_mfu(3e12, 1e12, "measured fp32 GEMM")
    assert value == 1.0 and "capped at 100%" in why and "3.000 TFLOP/s" in why and "MEGAZOO_PEAK_TFLOPS" in why
    value, why = capped_mfu(3e12, float("nan"))
    assert math.isnan(value) and "unknown" in why and percent(value) == "n/a"


def test_training_never_prints_mfu_above_100(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEGAZOO_PEAK_TFLOPS", "1e-9")  # a peak far below what any step reaches
    run = tmp_path / "run"
    assert main(["train", "gpt-tiny", "--set", "train.steps=2", "train.global_batch=2", "train.micro_batch=2",
                 "model.seq_length=16", "train.eval_iters=1", "log.plot=false", "checkpoint.save=false",
                 f"log.dir={run}"]) == 0
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["mfu"] for r in records if "mfu" in r] == [1.0, 1.0]
    assert "MFU 100.0% of" in out and "note         MFU capped at 100%" in out
    assert err.count("MFU capped at 100%") == 1  # said once in the log, not every step
    shown = [float(x) for x in re.findall(r"MFU[=: ]*([0-9.]+)%", out + err)]
    assert shown and max(shown) <= 100.0


# --- a closed pipe ----------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [["zoo", "list"], ["--help"]])
def test_closed_pipe_is_a_quiet_exit(argv):
    proc = subprocess.Popen([sys.executable, "-m", "megazoo", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the command writes (as `| head` after its lines)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) in (0, 141)  # 141: 128 + SIGPIPE, what git and coreutils give
    assert err == b""


def test_closed_pipe_exit_status_is_141():
    proc = subprocess.Popen([sys.executable, "-m", "megazoo", "zoo", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    assert proc.wait(timeout=120) == 141 and proc.stderr.read() == b""


# --- --help exits 0 -----------------------------------------------------------------------------------
def _help_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's --help
        return stop.code or 0


def test_every_help_exits_zero(capsys):
    from megazoo.tasks.cli import available_tasks

    for name in COMMANDS:
        assert _help_code([name, "--help"]) == 0, name
    for task in available_tasks():
        assert _help_code(["task", task, "--help"]) == 0, task
        assert _help_code(["task", task, "-h"]) == 0, task
        stages = __import__(f"megazoo.tasks.{task}.cli", fromlist=["STAGES"]).STAGES
        for stage in stages:
            assert _help_code(["task", task, stage, "--help"]) == 0, (task, stage)
    assert f"usage: megazoo task {task} STAGE" in capsys.readouterr().out
    assert _help_code(["task", "race"]) == 2  # no stage and no --help: still a mistake


# --- MEGAZOO_DEBUG=1 ------------------------------------------------------------------------------------
def test_debug_shows_the_traceback_of_errors_commands_catch(monkeypatch, capsys):
    from megazoo.zoo.cards import CardError

    monkeypatch.setenv("MEGAZOO_DEBUG", "")
    assert main(["zoo", "show", "no-such-card"]) == 2
    assert main(["train", "gpt-tiny", "--set", "train.no_such_key=1"]) == 2
    assert capsys.readouterr().err.count(": error: ") == 2
    monkeypatch.setenv("MEGAZOO_DEBUG", "1")
    with pytest.raises(CardError, match="no-such-card"):
        main(["zoo", "show", "no-such-card"])
    with pytest.raises(ValueError, match="train.no_such_key"):
        main(["train", "gpt-tiny", "--set", "train.no_such_key=1"])


def test_debug_shows_the_errors_behind_a_from_none(monkeypatch):
    import megazoo.zoo.cli_zoo as zoo

    def run(args):
        try:
            json.loads("{")
        except ValueError:
            raise ValueError("cards.json:1: not valid JSON") from None

    monkeypatch.setattr(zoo, "run", run)
    monkeypatch.setenv("MEGAZOO_DEBUG", "1")
    with pytest.raises(ValueError, match="not valid JSON") as caught:
        main(["zoo", "list"])
    assert isinstance(caught.value.__context__, json.JSONDecodeError)
    assert caught.value.__suppress_context__ is False  # Python prints the JSON error above it
