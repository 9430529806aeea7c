"""Every task package has the shape DESIGN.md 3.5 promises (tests/task_contract.py says what is
checked), and the check catches violations planted in a copy of the tree."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from tests.task_contract import VERBS, task_names, violations

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_task_package_keeps_the_contract():
    assert len(task_names(ROOT)) >= 8, "tasks/ not found"
    found = violations(ROOT)
    assert not found, "task packages break the contract:\n" + "\n".join(found)


def test_the_vocabulary_is_the_dispatchers():
    from megazoo.tasks.cli import VERBS as dispatched

    assert tuple(dispatched) == VERBS


def test_every_extra_verb_says_what_it_does():
    import importlib

    for task in task_names(ROOT):
        cli = importlib.import_module(f"megazoo.tasks.{task}.cli")
        for verb, why in getattr(cli, "EXTRAS", {}).items():
            assert verb in cli.STAGES, f"{task}: EXTRAS names `{verb}`, which is no stage"
            assert isinstance(why, str) and len(why.split()) >= 3, f"{task}: EXTRAS[{verb!r}] must say what it does"
        for old, verb in getattr(cli, "ALIASES", {}).items():
            assert verb in cli.STAGES and old not in cli.STAGES, f"{task}: alias {old} -> {verb} is no rename"


@pytest.fixture
def tree(tmp_path):
    """A copy of what the contract reads: tasks/, recipes/, docs/tasks.md, pyproject.toml."""
    for folder in ("tasks", "recipes"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "tasks.md", tmp_path / "docs" / "tasks.md")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    assert violations(tmp_path) == violations(ROOT)
    return tmp_path


def test_a_planted_backward_is_caught(tree):
    path = tree / "tasks" / "race" / "evaluate.py"
    path.write_text(path.read_text() + "\n\ndef cheat(loss):\n    loss.backward()\n")
    found = [v for v in violations(tree) if v.startswith("tasks/race/evaluate.py:")]
    assert len(found) == 1 and "`.backward(`" in found[0]


def test_planted_writes_and_tokenizers_are_caught(tree):
    path = tree / "tasks" / "story" / "data.py"
    path.write_text(path.read_text() + "\n\ndef sneak(a, b):\n    import os\n    os.replace(a, b)\n    a.rename(b)\n"
                    "    from transformers import AutoTokenizer\n    return AutoTokenizer\n")
    found = " ".join(v for v in violations(tree) if v.startswith("tasks/story/data.py:"))
    for what in ("`os.replace`", "`.rename(`", "`AutoTokenizer`"):
        assert what in found


def test_a_missing_docs_row_is_caught(tree):
    docs = tree / "docs" / "tasks.md"
    docs.write_text("\n".join(line for line in docs.read_text().splitlines() if not line.startswith("| `bias` |")))
    assert "tasks/bias: no row `| `bias` | ...` in docs/tasks.md's package table" in violations(tree)


def test_an_unknown_verb_and_missing_pieces_are_caught(tree):
    cli = tree / "tasks" / "race" / "cli.py"
    cli.write_text(cli.read_text().replace('"evaluate":', '"grade":', 1))
    (tree / "recipes" / "race.sh").unlink()
    text = "\n".join(violations(tree))
    assert "tasks/race: stage `grade` is not a verb" in text
    assert "tasks/race: no `evaluate` stage" in text
    assert "tasks/race: no recipe script recipes/race.sh" in text


def test_a_task_without_builder_or_board_is_caught(tree):
    toml = tree / "pyproject.toml"
    text = toml.read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith(("race =", "detox =")))
    toml.write_text(text)
    found = "\n".join(violations(tree))
    assert "tasks/race: no builder on the trainer" in found
    assert "tasks/detox: no leaderboard entry" in found
