"""megazoo's zero-shot tasks that differ by design from lm-eval's task of the same name carry names of
their own (issue 41): `race_gpt3` and `wikitext103_megatron`. The old names are refused in one line
naming the new name and lm-eval's task through `megazoo eval lm-eval`; a results.json written before
the rename is read with the new names (eval/task_names.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

from megazoo.eval.task_names import RENAMED, current_name

FIXTURES = Path(__file__).parent / "fixtures"
WIKITEXT = FIXTURES / "eval" / "wikitext" / "wiki.test.tokens"
RACE_DEV = FIXTURES / "race" / "RACE" / "dev"
LM_EVAL_CALL = "`megazoo eval lm-eval --model megazoo --model_args pretrained=DIR --tasks {old}`"


def test_the_names():
    from megazoo.eval.registry import evaluations
    from megazoo.eval.suites import TASKS

    assert {old: new for old, (new, _, _) in RENAMED.items()} == {"race": "race_gpt3",
                                                                  "wikitext": "wikitext103_megatron"}
    assert not set(RENAMED) & set(TASKS) and {"race_gpt3", "wikitext103_megatron"} <= set(TASKS)
    # one name, one evaluation: no zero-shot task shares a name with a registered task evaluation
    assert not set(TASKS) & set(evaluations())


def test_the_command_the_message_names_exists(monkeypatch):
    """lm-eval's tasks of the old names exist, and the message's command hands them to lm-eval's own
    command line."""
    import lm_eval.__main__ as lm_eval_main

    from megazoo.cli import main

    tasks = Path(importlib.util.find_spec("lm_eval").submodule_search_locations[0]) / "tasks"
    assert "task: race\n" in (tasks / "race" / "race.yaml").read_text()
    assert "task: wikitext\n" in (tasks / "wikitext" / "wikitext.yaml").read_text()
    seen = []
    monkeypatch.setattr(lm_eval_main, "cli_evaluate", lambda: seen.append(list(sys.argv)))
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # the command sets lm-eval's argv
    command = LM_EVAL_CALL.format(old="race").strip("`").split()
    assert command[:3] == ["megazoo", "eval", "lm-eval"] and main(command[1:]) == 0
    assert seen == [["lm_eval", *command[3:]]]


@pytest.mark.parametrize("old, new, data", [("race", "race_gpt3", RACE_DEV),
                                            ("wikitext", "wikitext103_megatron", WIKITEXT)])
def test_eval_task_refuses_an_old_name_in_one_line(capsys, old, new, data):
    from megazoo.cli import main

    # refused before the model folder is even looked at
    assert main(["eval", "task", old, "--data", str(data), "--hf", "no-such-dir"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"megazoo eval task: error: task '{old}' is now '{new}' (")
    assert err.endswith(f"lm-eval's '{old}' is another evaluation: run it with {LM_EVAL_CALL.format(old=old)}")


def _suite(tmp_path, tasks, **extra) -> Path:
    (tmp_path / "hf").mkdir(exist_ok=True)
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "out": "board", "models": [{"name": "lm", "hf": "hf"}],
                                    "tasks": tasks, **extra}, sort_keys=False))
    return path


def test_suite_with_old_wikitext_is_refused_at_its_line(tmp_path):
    from megazoo.eval.leaderboard import SuiteError, load_suite

    path = _suite(tmp_path, [{"name": "lambada", "path": "x"}, {"name": "wikitext", "path": str(WIKITEXT)}])
    with pytest.raises(SuiteError) as e:
        load_suite(path)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "wikitext" in text)
    assert str(e.value).startswith(f"{path}:{line}: tasks[1]: task 'wikitext' is now 'wikitext103_megatron' (")


def test_suite_race_for_a_language_model(tmp_path, capsys, monkeypatch):
    """`race` in a suite is RACE's fine-tuned evaluation; one that would score only language models is a
    suite written before the rename (it meant zero-shot RACE): refused; beside race_gpt3, the language
    models get race_gpt3 and "-" under `race`."""
    import megazoo.eval.leaderboard as board
    from megazoo.cli import main
    from tests.test_eval_protocols import CharLM

    monkeypatch.setattr(board, "_load_model", lambda entry: pytest.fail("the model was loaded"))
    path = _suite(tmp_path, [{"name": "race", "path": str(RACE_DEV.parent), "split": "dev"}])
    assert main(["eval", "leaderboard", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{path}:" in err and "tasks[0]: task 'race' is now 'race_gpt3'" in err
    assert "model lm is a language model" in err and LM_EVAL_CALL.format(old="race") in err
    assert not (tmp_path / "board").exists()

    monkeypatch.setattr(board, "_load_model", lambda entry: CharLM(max_length=512))
    path = _suite(tmp_path, [{"name": "race", "path": str(RACE_DEV.parent), "split": "dev"},
                             {"name": "race_gpt3", "path": str(RACE_DEV)}])
    report = board.run_leaderboard(path, progress=False)
    assert set(report["results"]["lm"]) == {"race_gpt3"} and report["results"]["lm"]["race_gpt3"]["n"] == 2
    assert [(s["task"], s["why"]) for s in report["skipped"]] == [("race", "a lm model; race scores race")]
    assert report["warnings"] == []


def test_suite_race_with_fine_tunes_and_language_models_warns():
    from megazoo.eval.leaderboard import check_old_names
    from megazoo.eval.registry import evaluations

    suite = {"tasks": [{"name": "lambada"}, {"name": "race"}], "_text": ""}
    kinds = {"ft": "race", "gpt": "lm", "llama": "lm"}
    assert check_old_names("s.yaml", suite, kinds, evaluations()) == [
        's.yaml: tasks[1] `race` scores checkpoints fine-tuned on it; the language models (gpt, llama) show "-" '
        "under it: GPT-3's zero-shot RACE, `race` before issue 41, is `race_gpt3`; list it to score them"]
    assert check_old_names("s.yaml", {**suite, "tasks": suite["tasks"] + [{"name": "race_gpt3"}]}, kinds,
                           evaluations()) == []
    assert check_old_names("s.yaml", suite, {"ft": "race", "bert": "encoder"}, evaluations()) == []


def test_a_baseline_written_before_the_rename_is_read_with_the_new_names(tmp_path, monkeypatch):
    import megazoo.eval.leaderboard as board
    from tests.test_eval_protocols import CharLM

    zero_shot_race = {"acc": 0.5, "acc_norm": 0.5, "acc_calibrated": 0.5, "n": 2, "num_fewshot": 0}
    fine_tuned_race = {"accuracy": 0.75, "accuracy_high": 0.5, "accuracy_middle": 1.0, "n": 2}
    wikitext = {"adjusted_ppl": 1.5, "avg_loss": 0.4, "ppl": 1.5, "stride": 16, "token_ratio": 1.0, "tokens": 9}
    old = {"suite": "s", "results": {"lm": {"race": zero_shot_race, "wikitext": wikitext},
                                     "ft": {"race": fine_tuned_race}}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert board.read_baseline(tmp_path / "old.json") == {
        "lm": {"race_gpt3": zero_shot_race, "wikitext103_megatron": wikitext},
        "ft": {"race": fine_tuned_race}}  # RACE's fine-tuned evaluation is still `race`
    assert current_name("lambada", {"acc": 1.0}) == "lambada" and current_name("race_gpt3", {"acc": 1}) == "race_gpt3"

    # the run compares against it under the new names: the perplexity rose from 1.5, a regression
    monkeypatch.setattr(board, "_load_model", lambda entry: CharLM(max_length=48))
    path = _suite(tmp_path, [{"name": "wikitext103_megatron", "path": str(WIKITEXT), "stride": 16}],
                  baseline="old.json")
    report = board.run_leaderboard(path, progress=False)
    flagged = {(r["task"], r["metric"]) for r in report["regressions"]}
    assert ("wikitext103_megatron", "adjusted_ppl") in flagged and {t for t, _ in flagged} == {"wikitext103_megatron"}
