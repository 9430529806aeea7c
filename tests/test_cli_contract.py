"""The output policy over every command (issue #36): nothing a command did not make is lost.

Commands are enumerated from the parsers (tests/cli_contract.py), so a new command is covered as soon
as it exists: it must declare its path arguments (core/fs/policy.py), and every declared output is
tried against output = input, output inside an input, input inside the output, an existing
non-empty target with and without --overwrite, `..`, the working directory and scratch-like siblings.
"""

from __future__ import annotations

import re
import sys
import types

import pytest

from megazoo.core.fs import input_arg, output_arg
from tests.cli_contract import commands, inputs_of, outputs_of, role, run_case, scenarios

COMMANDS = {c.name: c for c in commands()}

# commands that print and write no file
WRITES_NOTHING = {"zoo list", "zoo show", "plan", "generate", "task dialogue chat", "completion"}
# commands whose outputs are named in a recipe or suite file (log.dir, the suite's results folder,
# a curation recipe's output): the config loaders check them with core.fs.check_paths
CONFIG_OUTPUTS = {"train", "quickstart", "eval leaderboard", "curate"} | {
    name for name, c in COMMANDS.items() if any(a.dest == "recipe" for a in c.parser._actions)}

# an argument whose help or name says it is a path must declare whether it is read or written
PATH_WORDS = re.compile(r"\b(FILE|file|folder|directory|\.jsonl?|\.tsv|\.csv|\.npy|\.bin|checkpoint|prefix|"
                        r"PREFIX|DIR|path)\b")
NOT_PATHS = {"json", "field", "json_key", "format", "fmt", "kind", "pooling", "quiet", "no_progress", "set",
             "overrides", "tokenizer", "dtype", "split", "text_mode", "name", "model", "stage", "without", "gguf_file"}


def _undeclared_paths(cmd) -> list[str]:
    out = []
    for action in cmd.parser._actions:
        if role(action) is not None or action.dest in NOT_PATHS or action.dest in ("help", "overwrite"):
            continue
        if action.nargs == 0 or action.type in (int, float) or getattr(action.type, "__name__", "") in (
                "int", "float", "positive_int", "nonnegative_int", "positive_float", "probability"):
            continue
        if PATH_WORDS.search(action.help or "") or action.dest in ("out", "output", "out_dir", "output_prefix",
                                                                     "out_prefix", "input", "data", "checkpoint"):
            out.append(action.dest)
    return out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_path_argument_is_declared(name):
    cmd = COMMANDS[name]
    undeclared = _undeclared_paths(cmd)
    assert not undeclared, (f"`megazoo {name}`: declare {undeclared} with core.fs.input_arg/output_arg, "
                            "or name them in NOT_PATHS if they are not paths")
    if not outputs_of(cmd):
        assert name in WRITES_NOTHING | CONFIG_OUTPUTS, (
            f"`megazoo {name}` declares no output: declare it with core.fs.output_arg, or list the command in "
            "WRITES_NOTHING / CONFIG_OUTPUTS with the reason")


@pytest.mark.parametrize("name", sorted(n for n, c in COMMANDS.items() if outputs_of(c)))
def test_no_input_or_bystander_is_lost(name, tmp_path):
    cmd = COMMANDS[name]
    failures = []
    for i, case in enumerate(scenarios(cmd, tmp_path)):
        problems = run_case(case, tmp_path)
        if problems:
            failures.append(f"{case.title}: {'; '.join(problems[:4])}  [{' '.join(case.argv)}]")
    assert not failures, f"`megazoo {name}`:\n" + "\n".join(failures)


# ---- the contract catches what it should ------------------------------------------------------------

def _plant(monkeypatch, run, declare_out=True):
    """A command `planted` whose run is `run(args)`; registered as a top-level command."""
    module = types.ModuleType("tests_planted_command")

    def add_arguments(parser):
        input_arg(parser, "--data", help="the input file")
        if declare_out:
            output_arg(parser, "--out", help="FILE.json to write")
        else:
            parser.add_argument("--out", help="FILE.json to write")

    module.add_arguments = add_arguments
    module.run = run
    monkeypatch.setitem(sys.modules, module.__name__, module)
    from megazoo import cli

    monkeypatch.setitem(cli.COMMANDS, "planted", (module.__name__, "a planted command"))
    return {c.name: c for c in commands()}["planted"]


def test_contract_catches_a_command_that_deletes_a_bystander(monkeypatch, tmp_path):
    def run(args):
        from pathlib import Path

        for p in Path(args.out).parent.glob("bystander.txt"):
            p.unlink()
        Path(args.out).write_text("{}")
        return 0

    cmd = _plant(monkeypatch, run)
    found = [p for case in scenarios(cmd, tmp_path) for p in run_case(case, tmp_path)]
    assert any("bystander.txt removed" in p for p in found), found


def test_contract_catches_a_command_that_writes_half_then_fails(monkeypatch, tmp_path):
    def run(args):
        from pathlib import Path

        Path(args.out).write_text("half")
        raise ValueError("the input is bad")

    cmd = _plant(monkeypatch, run)
    found = [p for case in scenarios(cmd, tmp_path) for p in run_case(case, tmp_path)]
    assert any("target changed (exit 2)" in p for p in found), found  # --overwrite on failure: old output lost


def test_contract_catches_an_undeclared_output(monkeypatch):
    cmd = _plant(monkeypatch, lambda args: 0, declare_out=False)
    assert _undeclared_paths(cmd) == ["out"]
