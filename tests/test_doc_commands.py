"""Every command in README.md and docs/*.md runs as written (issue #41 point 2).

tests/doc_commands.py finds the commands, tests/doc_policy.py says what is done with each (run with its
size substitutions or as a dry run, help-check, or skip, with the reason). Each command is one test,
on a fresh copy of the repository: the files git tracks (and the untracked ones it does not ignore),
with the test's own virtual environment as the copy's .venv; a command that runs gets a copy of its
own, so nothing in the checkout changes. A failure names the doc file and line, and prints the whole
list of commands with what was done with each. The planted-doc tests check that the checker fails;
the recipe tests check that recipes/*.sh find the interpreter without an activated environment.
`python -m tests.doc_commands` lists the commands found.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from tests import doc_policy
from tests.doc_commands import DocCommand, commands_in, extract

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)
COMMANDS = extract(ROOT)
PLANS = [doc_policy.plan(cmd) for cmd in COMMANDS]
GLOBAL_OPTIONS = ("-q", "--quiet", "-v", "--verbose")
PYCACHE = ".doc-test-pycache"
TIMEOUT = 420  # seconds for one command; a loaded 2-core machine needs most of it for the 4-rank run


def table(plans=PLANS) -> str:
    return "the documented commands and what was done with each:\n" + "\n".join(p.line() for p in plans)


def _ids(plans):
    seen: dict[str, int] = {}
    out = []
    for p in plans:
        seen[p.cmd.where] = seen.get(p.cmd.where, 0) + 1
        out.append(f"{p.cmd.where}-{seen[p.cmd.where]}")
    return out


@lru_cache(maxsize=1)
def _doc_variables() -> tuple[tuple[str, str], ...]:
    return tuple((name, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout.strip()) for name, code in doc_policy.ENV_PYTHON.items())


def environment(copy: Path, activated: bool) -> dict[str, str]:
    """The environment of a user in a new shell: PATH without any virtual environment; with `activated`,
    what `source .venv/bin/activate` adds (the copy's .venv/bin first on PATH)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "PYTEST_"))}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not p.startswith(str(VENV))]
    env["PATH"] = os.pathsep.join(([str(copy / ".venv" / "bin")] if activated else []) + path)
    if activated:
        env["VIRTUAL_ENV"] = str(copy / ".venv")
    if (copy / PYCACHE).is_dir():  # see `pristine`: bytecode written once, read by every later command
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str((copy / PYCACHE).resolve())
    env.update(_doc_variables())
    return env


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """The repository as a fresh clone has it, with the test's virtual environment as its .venv (whose
    megazoo, installed editable, is this checkout's code: the same files as the copy's). Help-checks
    run here (they write nothing); a command that runs gets a copy of its own (`fresh`)."""
    if sys.prefix == sys.base_prefix:
        pytest.skip("the docs' commands need a virtual environment (scripts/setup.sh makes .venv)")
    copy = tmp_path_factory.mktemp("docs") / "megazoo"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in listed)):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    (copy / ".venv").symlink_to(VENV, target_is_directory=True)
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # an environment that writes no bytecode (and a .venv installed without it) makes every command
        # compile torch's sources again (~2.5 s of CPU each); the commands share one cache instead, a
        # folder of this module's, which the copies link to
        (copy / PYCACHE).symlink_to(tmp_path_factory.mktemp("pycache"), target_is_directory=True)
    return copy


def fresh(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the fresh clone of a test's own (commands write runs/... into it)."""
    copy = tmp_path / "megazoo"
    shutil.copytree(pristine, copy, symlinks=True)
    return copy


@pytest.fixture
def repo(pristine, tmp_path) -> Path:
    return fresh(pristine, tmp_path)


def _shell(text: str, cwd: Path, activated: bool = True, extra: dict | None = None) -> subprocess.CompletedProcess:
    """`bash -c TEXT` in `cwd`; past TIMEOUT the whole process group (the ranks a command started too)
    is stopped and the test fails with what the command printed so far."""
    env = {**environment(cwd, activated), **(extra or {})}
    with subprocess.Popen(["bash", "-c", text], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return subprocess.CompletedProcess(proc.args, 124, out, err + f"\n(stopped after {TIMEOUT} s)")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _megazoo(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`megazoo ARGV` in this process, in `cwd` (a help or a config check needs no process of its own:
    seconds saved per command), as a CompletedProcess."""
    from megazoo.cli import main

    out, err, old = io.StringIO(), io.StringIO(), os.getcwd()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 2)
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(["megazoo", *argv], code, out.getvalue(), err.getvalue())


def _fail(p: doc_policy.Plan, what: str, done: subprocess.CompletedProcess | None = None) -> str:
    out = f"\n--- output ---\n{(done.stdout + done.stderr)[-2500:]}" if done is not None else ""
    return f"{p.cmd.where}: {what}\n  {p.cmd.text}{out}\n\n{table()}"


def options(text: str) -> list[str]:
    """The options a command line uses (`--flag`, `-q`), from its optional groups too."""
    words = shlex.split(text.replace("[", " ").replace("]", " ").replace("|", " "), comments=True)
    return sorted({w.split("=", 1)[0] for w in words if re.match(r"^--?[A-Za-z][\w-]*", w)})


def help_check(p: doc_policy.Plan, cwd: Path) -> None:
    text = p.text or doc_policy.without_optional(p.cmd.text)
    if text.startswith("bash recipes/"):
        done = _shell(f"{text.split()[0]} {text.split()[1]} --help", cwd, activated=False)
        assert done.returncode == 0 and "usage" in done.stdout.lower(), _fail(p, "the recipe's --help failed", done)
        return
    if re.match(r"^lm_eval -", text):  # lm-eval's legacy form runs `lm_eval run`, whose help has the options
        text = "lm_eval run " + text[len("lm_eval "):]
    parts = [text]
    if text.startswith("torchrun "):  # the launcher's options, then the megazoo command it starts
        parts = [text.split(" -m ", 1)[0], "megazoo " + text.split(" -m megazoo ", 1)[1]]
    full = p.cmd.text if len(parts) == 1 else parts[0]
    for k, part in enumerate(parts):
        words = shlex.split(part, comments=True)
        if words[0].endswith("megazoo"):  # `megazoo -q train ...`: the global options stand before the command
            words = words[:1] + [w for w in words[1:] if w not in GLOBAL_OPTIONS]
        head = [w for w in words[:next((i for i, w in enumerate(words) if w.startswith("-")), len(words))]]
        if head[0].startswith(".venv/bin/"):
            assert os.access(cwd / head[0], os.X_OK), _fail(p, f"{head[0]} is not in a fresh set-up (scripts/setup.sh)")
        in_process = head[0] in ("megazoo", ".venv/bin/megazoo")
        done = _megazoo(head[1:] + ["--help"], cwd) if in_process else _shell(shlex.join(head + ["--help"]), cwd)
        assert done.returncode == 0 and "usage" in done.stdout.lower(), \
            _fail(p, f"`{shlex.join(head)} --help` failed", done)
        flags = [f for f in options(full if k == 0 else part) if f not in ("-h", "--help")]
        missing = [f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", done.stdout)]
        assert not missing, _fail(p, f"option(s) {missing} are not in `{shlex.join(head)} --help`", done)
    if text.startswith("lm_eval "):
        lm_eval_model_check(p, text, cwd)
    if p.config_check:
        config_check(p, cwd)


def lm_eval_model_check(p: doc_policy.Plan, text: str, cwd: Path) -> None:
    """`--model NAME` of an lm_eval line is registered with lm-eval (megazoo's backend: issue #41 point 4)."""
    words = shlex.split(text, comments=True)
    if "--model" not in words:
        return
    name = words[words.index("--model") + 1]
    code = f"import lm_eval.models; from lm_eval.api.registry import get_model; get_model({name!r})"
    done = _shell(f"python -c {shlex.quote(code)}", cwd)
    assert done.returncode == 0, _fail(p, f"lm-eval does not know --model {name}", done)


def config_check(p: doc_policy.Plan, cwd: Path) -> None:
    """The recipe with the doc's --set words and --nproc, loaded and validated by `megazoo config show`."""
    words = [w for w in shlex.split(p.text, comments=True) if w != "..."]
    at = words.index("train") + 1 if "train" in words else words.index("finetune") + 1
    recipe = words[at]
    if doc_policy.PLACEHOLDER.match(recipe):
        return
    sets = [w for w in words[at + 1:] if "=" in w and not w.startswith("-")]
    nproc = words[words.index("--nproc") + 1:words.index("--nproc") + 2] if "--nproc" in words else []
    cmd = ["config", "show", recipe] + (["--set", *sets] if sets else []) + (["--nproc", *nproc] if nproc else [])
    done = _megazoo(cmd, cwd)
    missing_input = re.search(r"error: .*(no such|not found|does not exist)", done.stderr)
    assert done.returncode == 0 or missing_input, \
        _fail(p, f"`megazoo {shlex.join(cmd)}` refused the doc's settings", done)


def run_check(p: doc_policy.Plan, cwd: Path) -> None:
    for name, content in doc_policy.INPUTS.items():
        if re.search(rf"(?<![\w/.]){re.escape(name)}(?![\w.])", p.text):
            (cwd / name).write_text(content)
    for before in p.needs:
        done = _shell(before, cwd)
        assert done.returncode == 0, _fail(p, f"its prerequisite `{before}` failed", done)
    done = _shell(p.text, cwd, activated=not p.text.startswith("bash "))
    assert done.returncode == 0, _fail(p, f"exit {done.returncode} running `{p.text}`", done)
    assert "Traceback" not in done.stderr, _fail(p, "printed a traceback", done)


def check(p: doc_policy.Plan, cwd: Path) -> None:
    """Run or help-check one command in the copy `cwd`; AssertionError naming the doc line when it fails."""
    if p.action == "run":
        run_check(p, cwd)
    elif p.action == "help":
        help_check(p, cwd)


CHECKED = [p for p in PLANS if p.action != "skip"]


# the commands that run are `slow` (about two minutes of CPU together): the quick tier help-checks the rest
@pytest.mark.parametrize("p", [pytest.param(p, marks=[pytest.mark.slow] if p.action == "run" else [])
                               for p in CHECKED], ids=_ids(CHECKED))
def test_doc_command(p, pristine, tmp_path):
    check(p, fresh(pristine, tmp_path) if p.action == "run" else pristine)


def test_the_docs_show_commands_and_each_skip_has_a_reason():
    assert len(COMMANDS) > 40, table()
    assert sum(p.action == "run" for p in PLANS) >= 15, table()
    assert all(p.reason for p in PLANS if p.action != "run"), table()
    trains = [p for p in PLANS if p.action == "run" and re.match(doc_policy.TRAIN_FULL, p.cmd.text)]
    assert trains and "--dry-run" not in trains[0].text, "no documented `megazoo train` trains\n" + table()


@pytest.mark.slow
def test_a_recipe_runs_without_an_activated_environment(repo):
    """bash recipes/curate.sh on its generated data, PATH without any virtual environment: the recipe
    finds the copy's .venv by itself (the README shows it as `(or bash recipes/curate.sh)`)."""
    script, out, knobs = doc_policy.RECIPE_RUN
    done = _shell(f"{script} {out}", repo, activated=False, extra=knobs)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert (repo / out / "curate" / "06-blend" / "data_path.txt").is_file()
    assert (repo / out / "train" / "metrics.jsonl").is_file()


@pytest.mark.parametrize("line, expected", [
    ("megazoo export-hf CKPT OUT_DIR --no-such-flag", "option(s) ['--no-such-flag'] are not in"),
    ("megazoo zoo show gpt-345m --no-such-flag", "exit 2 running"),
    ("megazoo zoo lst", "exit 2 running"),  # an unknown subcommand that runs
    ("megazoo exprot-hf CKPT OUT_DIR", "`megazoo exprot-hf CKPT OUT_DIR --help` failed"),  # one that is help-checked
    ("megazoo config show gpt-tiny --set parallel.dp=2", "exit 2 running"),
    ("megazoo task race train race --set parallel.dp=2 ...", "refused the doc's settings"),
    ("megazoo train gpt-tiny --set parallel.cp=2 train.stepz=4 --nproc 2", "refused the doc's settings"),
    ("bash recipes/racing.sh", "the recipe's --help failed"),
    ("lm_eval --model megazo --model_args pretrained=CKPT --tasks ...", "lm-eval does not know --model megazo"),
])
def test_a_planted_wrong_command_fails_naming_its_file_and_line(tmp_path, pristine, line, expected):
    doc = tmp_path / "planted.md"
    doc.write_text(f"# a doc\n\nSome words.\n\n```bash\n{line}\n```\n")
    (cmd,) = commands_in(doc, tmp_path, tables=False)
    assert cmd == DocCommand("planted.md", 6, line, "block")
    p = doc_policy.plan(cmd)
    with pytest.raises(AssertionError) as failed:
        check(p, fresh(pristine, tmp_path) if p.action == "run" else pristine)
    assert "planted.md:6: " in str(failed.value) and expected in str(failed.value), str(failed.value)[:2000]


def test_the_extraction_reads_blocks_and_table_cells_as_a_shell_would(tmp_path):
    """Continuations, chains, comments, prompts, console output, diagrams and table cells (no process)."""
    doc = tmp_path / "doc.md"
    doc.write_text("\n".join([
        "| I want to | command |", "|---|---|",
        "| see models | `megazoo zoo list`, `megazoo zoo show gpt-345m` (or `megazoo plan`) |",  # two commands; a bare name is none
        "| split a cell | `megazoo curate curate [--dask-workers 2 \\| --scheduler tcp://HOST:8786]` |",
        "```bash",
        "# a comment line",
        "megazoo train gpt-tiny \\",
        "  --set train.steps=2   # the size",
        "megazoo zoo list && megazoo plan gpt-1.3b --gpus 8 ; megazoo zoo show gpt-345m",
        "$ megazoo generate CKPT --prompt \"a # b\"",
        "```",
        "```console",
        "$ megazoo zoo list",
        "gpt-tiny   136,960 parameters",
        "```",
        "```",
        "core/  the runtime",
        "megazoo preprocess --input docs.jsonl",
        "```",
        "Prose: `megazoo train gpt-tiny --set parallel.tp=2` is named in passing.",
    ]) + "\n")
    found = [(c.line, c.text, c.place) for c in commands_in(doc, tmp_path, tables=True)]
    assert found == [
        (3, "megazoo zoo list", "table"), (3, "megazoo zoo show gpt-345m", "table"),
        (4, "megazoo curate curate [--dask-workers 2 | --scheduler tcp://HOST:8786]", "table"),
        (7, "megazoo train gpt-tiny --set train.steps=2", "block"),
        (9, "megazoo zoo list", "block"), (9, "megazoo plan gpt-1.3b --gpus 8", "block"),
        (9, "megazoo zoo show gpt-345m", "block"),
        (10, 'megazoo generate CKPT --prompt "a # b"', "block"),
        (13, "megazoo zoo list", "block"),
        (18, "megazoo preprocess --input docs.jsonl", "block"),
    ], found
    assert doc_policy.plan(DocCommand("doc.md", 7, found[3][1], "block")).text.endswith("--set train.steps=2 --dry-run")
    assert doc_policy.plan(DocCommand("doc.md", 1, "megazoo train sft-tiny", "block")).text == \
        "megazoo train sft-tiny --set train.steps=2 train.epochs=0"
    headline = "megazoo train gpt-tiny --set parallel.tp=2 parallel.pp=2 --nproc 4"
    assert doc_policy.plan(DocCommand("doc.md", 1, headline, "block")).text == headline + \
        " --set train.steps=2 train.epochs=0"
    assert doc_policy.plan(DocCommand("doc.md", 4, found[2][1], "table")).text == "megazoo curate curate"


def test_a_recipe_finds_the_project_python_in_order(pristine, tmp_path):
    """recipes/find-python.sh: $MEGAZOO_PYTHON, else the repository's .venv, else python3/python on PATH
    that imports megazoo, else one line saying to run ./scripts/setup.sh (exit 2, no traceback)."""
    def interpreter(done):
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.strip().splitlines()[-1]

    venv_python = VENV / "bin" / "python"
    assert interpreter(_shell("bash recipes/race.sh --help", pristine, activated=False)) == \
        f"interpreter: {pristine / '.venv' / 'bin' / 'python'}"
    assert interpreter(_shell("bash recipes/race.sh -h", pristine, activated=False,
                              extra={"MEGAZOO_PYTHON": str(venv_python)})) == f"interpreter: {venv_python}"
    done = _shell("bash recipes/race.sh --help", pristine, activated=False, extra={"MEGAZOO_PYTHON": "false"})
    assert done.returncode == 2 and "error: MEGAZOO_PYTHON=false cannot import megazoo" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout, done.stdout + done.stderr

    bare = tmp_path / "bare"  # a clone where ./scripts/setup.sh has not run: no .venv
    bare.mkdir()
    shutil.copytree(pristine / "recipes", bare / "recipes")
    path = environment(bare, activated=False)["PATH"]
    assert interpreter(_shell("bash recipes/race.sh --help", bare, activated=False,
                              extra={"PATH": os.pathsep.join([str(VENV / "bin"), path])})) == \
        f"interpreter: {VENV / 'bin' / 'python3'}"  # an activated environment, or megazoo installed for python3
    stubs = tmp_path / "stubs"  # python3 and python on PATH, neither with megazoo
    stubs.mkdir()
    for name in ("python3", "python"):
        (stubs / name).write_text("#!/bin/sh\nexit 1\n")
        (stubs / name).chmod(0o755)
    done = _shell("bash recipes/race.sh --help", bare, activated=False,
                  extra={"PATH": os.pathsep.join([str(stubs), path])})
    assert done.returncode == 2 and "error: no Python with megazoo found" in done.stderr, done.stderr
    assert "run ./scripts/setup.sh" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_every_recipe_script_sources_find_python():
    """Each recipes/*.sh finds the interpreter before its first command (issue #41: exit 127 without it)."""
    for script in sorted((ROOT / "recipes").glob("*.sh")):
        if script.name == "find-python.sh":
            continue
        lines = script.read_text().splitlines()
        at = next((i for i, line in enumerate(lines) if "find-python.sh" in line), None)
        assert at is not None and lines[at].startswith("source "), f"{script.name}: does not source find-python.sh"
        first = next(i for i, line in enumerate(lines) if re.match(r"^\s*[^#\s]", line) and "set -" not in line)
        assert at == first, f"{script.name}:{first + 1}: runs before find-python.sh is sourced"
