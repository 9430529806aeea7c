"""The output-policy contract, checked on every command the parsers declare (tests/test_cli_contract.py).

`commands()` enumerates every command line there is: the top-level commands, their subcommands and
every task stage, each with its parser. For each declared output, `scenarios()` builds the cases a
careless user would type — output = input, output inside an input folder, an input inside the
output, an existing non-empty target with and without --overwrite, a target spelled with `..`, the
folder the user stands in, siblings named like scratch folders — and `run_case` runs the command
through `megazoo.cli.main` and reports every input or bystander file that is not byte-identical
afterwards. A new command is covered as soon as its parser declares its paths (core/fs/policy.py).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

from megazoo.core.fs.policy import ATTR

from tests.cli_helpers import snapshot  # noqa: F401 (fuzz_cli.py and the policy tests import it from here)

# argument values that are not paths: enough for argparse to accept the line
INT_TYPES = ("int", "positive_int", "nonnegative_int")
# arguments added to a command whose successful run would take minutes: they make it fail after the
# policy has let it start, so the cases still see what a failed run leaves behind
EXTRA = {"quickstart": ["--set", "no.such.key=1"]}


@dataclass
class Command:
    words: tuple[str, ...]  # e.g. ("task", "race", "evaluate")
    parser: argparse.ArgumentParser  # the parser that holds this command's own arguments

    @property
    def name(self) -> str:
        return " ".join(self.words)


def _parser_for(module_name, prog: str) -> argparse.ArgumentParser:
    """The parser of a command module (its name) or of a stage object with add_arguments."""
    module = importlib.import_module(module_name) if isinstance(module_name, str) else module_name
    parser = argparse.ArgumentParser(prog=prog)
    module.add_arguments(parser)
    return parser


def commands() -> list[Command]:
    """Every command line megazoo has, with the parser of its own arguments."""
    from megazoo.cli import COMMANDS
    from megazoo.tasks.cli import available_tasks, stage_row

    found = []
    for name, (module_name, _) in COMMANDS.items():
        if name == "task":
            continue
        if name == "curate":  # its own dispatch: the recipe form (CONFIG_OUTPUTS) and one parser a stage
            from megazoo.curate.cli import stage_parsers

            found.append(Command((name,), _parser_for(module_name, f"megazoo {name}")))
            found += [Command((name, word), p) for word, p in stage_parsers().items()]
            continue
        module = importlib.import_module(module_name)
        parser = _parser_for(module_name, f"megazoo {name}")
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subs:
            for word, sub in subs[0].choices.items():
                if word in getattr(module, "PASSTHROUGH", ()):
                    continue
                found.append(Command((name, word), sub))
        else:
            found.append(Command((name,), parser))
    for task in available_tasks():
        stages = importlib.import_module(f"megazoo.tasks.{task}.cli").STAGES
        for stage, row in stages.items():
            found.append(Command(("task", task, stage), _parser_for(stage_row(row)[0], f"megazoo task {task} {stage}")))
    return found


def role(action):
    return getattr(action, ATTR, None)


def outputs_of(cmd: Command) -> list[argparse.Action]:
    return [a for a in cmd.parser._actions if role(a) is not None and role(a).role == "output"]


def inputs_of(cmd: Command) -> list[argparse.Action]:
    return [a for a in cmd.parser._actions if role(a) is not None and role(a).role == "input"]


def excluded(cmd: Command) -> set[argparse.Action]:
    """Members of mutually exclusive groups other than the first: never given together."""
    out = set()
    for group in cmd.parser._mutually_exclusive_groups:
        out.update(group._group_actions[1:])
    return out


def _plain_value(action) -> str:
    if action.choices:
        return str(next(iter(action.choices)))
    type_name = getattr(action.type, "__name__", "")
    if type_name in INT_TYPES:
        return "1"
    if type_name in ("float", "positive_float", "probability"):
        return "0.5"
    return "x"


def _put(argv: list[str], action, value: str) -> None:
    if action.option_strings:
        argv += [action.option_strings[0], value]
    else:
        argv.append(value)


@dataclass
class Case:
    title: str
    argv: list[str]
    target: Path  # the output under test: may change (unless `refused`)
    refused: bool  # the command must refuse (exit 2) and change nothing at all
    cwd: Path | None = None


def build_argv(cmd: Command, values: dict) -> list[str]:
    """The command line with `values` (action -> str) for path arguments and plain values elsewhere.
    Positionals go in parser order; optional declared inputs are given too, so each can be tested."""
    argv = list(cmd.words)
    skip = excluded(cmd)
    for action in cmd.parser._actions:
        if action in skip or isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action in values:
            _put(argv, action, str(values[action]))
        elif not action.option_strings and action.nargs != argparse.REMAINDER:
            _put(argv, action, _plain_value(action))
        elif action.required:
            _put(argv, action, _plain_value(action))
    return argv + EXTRA.get(cmd.name, [])


def make_inputs(cmd: Command, root: Path) -> dict:
    """An existing file for every declared input (the policy is checked before anything is read)."""
    values = {}
    skip = excluded(cmd)
    for i, action in enumerate(inputs_of(cmd)):
        if action in skip:
            continue
        if role(action).kind == "folder":
            folder = root / f"input{i}"
            folder.mkdir()
            (folder / "keep.txt").write_text(f"input folder {i}\n")
            values[action] = folder
        else:
            path = root / f"input{i}.txt"
            path.write_text(f"input file {i}: must survive\n")
            values[action] = path
    return values


def scenarios(cmd: Command, root: Path) -> list[Case]:
    """The contract's cases for every declared output of `cmd`, with their files made under `root`."""
    cases: list[Case] = []
    skip = excluded(cmd)
    for k, out in enumerate(outputs_of(cmd)):
        if out in skip:
            continue
        folder_kind = role(out).kind == "folder"

        def fresh(tag: str) -> tuple[Path, dict]:
            case_root = root / f"o{k}-{tag}"
            case_root.mkdir()
            (case_root / "bystander.txt").write_text("a bystander: must survive\n")
            return case_root, make_inputs(cmd, case_root)

        # output = input, for every input
        for action in inputs_of(cmd):
            if action in skip:
                continue
            case_root, values = fresh(f"eq-{action.dest}")
            values[out] = values[action]
            cases.append(Case(f"{out.dest} = {action.dest}", build_argv(cmd, values), values[out], True))
            cases.append(Case(f"{out.dest} = {action.dest} --overwrite", build_argv(cmd, values) + ["--overwrite"],
                              values[out], True))
            # output inside an input folder (unless the input allows it, as a run folder does)
            if not role(action).inside_ok:
                case_root, values = fresh(f"in-{action.dest}")
                folder = case_root / "input-folder"
                folder.mkdir()
                (folder / "keep.txt").write_text("inside the input folder\n")
                values[action] = folder
                values[out] = folder / "out"
                cases.append(Case(f"{out.dest} inside {action.dest}", build_argv(cmd, values), values[out], True))
            # an input inside the output folder
            case_root, values = fresh(f"contains-{action.dest}")
            holder = case_root / "holder"
            holder.mkdir()
            moved = holder / Path(values[action]).name
            os.replace(values[action], moved)
            values[action] = moved
            values[out] = holder
            cases.append(Case(f"{out.dest} contains {action.dest} --overwrite",
                              build_argv(cmd, values) + ["--overwrite"], holder, True))
        # an existing non-empty target
        if not role(out).resumable:
            case_root, values = fresh("exists")
            target = existing_target(case_root, folder_kind)
            values[out] = target
            cases.append(Case(f"{out.dest} exists", build_argv(cmd, values), target, True))
        # the same with --overwrite: the command may run (on inputs it cannot use) and fail; inputs and
        # bystanders must survive, and a failed run must leave the target as it was
        case_root, values = fresh("overwrite")
        target = existing_target(case_root, folder_kind)
        values[out] = target
        cases.append(Case(f"{out.dest} exists --overwrite", build_argv(cmd, values) + ["--overwrite"], target, False))
        # a target spelled with `..` that names a non-empty folder
        case_root, values = fresh("dotdot")
        (case_root / "box" / "sub").mkdir(parents=True)
        (case_root / "box" / "mine.txt").write_text("in box\n")
        values[out] = f"{case_root / 'box' / 'sub'}/.."
        cases.append(Case(f"{out.dest} = box/sub/..", build_argv(cmd, values), case_root / "box", True))
        # `..` from inside the folder: it contains the working directory, refused even with --overwrite
        case_root, values = fresh("cwd")
        inner = case_root / "box" / "inner"
        inner.mkdir(parents=True)
        (inner / "mine.txt").write_text("where the user stands\n")
        values[out] = ".."
        cases.append(Case(f"{out.dest} = .. (cwd inside)", build_argv(cmd, values) + ["--overwrite"],
                          case_root / "box", True, cwd=inner))
        # siblings named like scratch folders and temporary files, beside a fresh target
        case_root, values = fresh("scratch")
        target = case_root / "target"
        for name in ("target.tmp", ".target.tmp-1-abc", ".target.old-1-0123abcd", "target.mz1-0123abcd.tmp"):
            sib = case_root / name
            if "mz" in name:
                sib.write_text("a file named like megazoo's temporary files\n")
            else:
                sib.mkdir()
                (sib / "mine.txt").write_text("named like a scratch folder, but the user's\n")
        values[out] = target
        cases.append(Case(f"{out.dest} beside scratch-like siblings", build_argv(cmd, values), target, False))
    return cases


def existing_target(case_root: Path, folder_kind: bool) -> Path:
    """CASE_ROOT/target holding the user's own content: a folder with a file, or a file."""
    target = case_root / "target"
    if folder_kind:
        target.mkdir()
        (target / "mine.txt").write_text("the user's own file\n")
    else:
        target.write_text("the user's own output\n")
    return target


def run_case(case: Case, root: Path) -> list[str]:
    """Run one case; the problems found (empty: the contract holds)."""
    from megazoo.cli import main

    before = snapshot(root)
    target = Path(os.path.realpath(case.target if case.cwd is None else case.cwd / case.target))
    err = io.StringIO()
    old_cwd = os.getcwd()
    try:
        if case.cwd is not None:
            os.chdir(case.cwd)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                code = main(case.argv)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 2
            except Exception as exc:  # noqa: BLE001 - a traceback is a finding, reported with the files
                code = f"traceback {type(exc).__name__}: {exc}"
    finally:
        os.chdir(old_cwd)
    after = snapshot(root)
    problems = []
    if case.refused and code != 2:
        problems.append(f"expected a refusal (exit 2), got {code}: {err.getvalue().strip()[-300:]}")
    for rel in sorted(set(before) | set(after)):
        if before.get(rel) == after.get(rel):
            continue
        path = Path(os.path.realpath(root / rel))
        if code == 0 and not case.refused and (path == target or target in path.parents or _own_output(target, path)):
            continue  # a successful run wrote its own output
        what = "created" if rel not in before else "removed" if rel not in after else "changed"
        problems.append(f"{rel} {what} (exit {code})")
    return problems


def _own_output(target: Path, path: Path) -> bool:
    """A derived output of a successful run beside the target (FILE.predictions.json, P.bin)."""
    return path.parent == target.parent and path.name.startswith(target.name.split(".")[0] + ".")
