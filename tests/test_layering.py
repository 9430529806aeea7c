"""Dependencies point one way (DESIGN.md: core <- zoo <- eval <- tasks, the command-line package on
top): core imports nothing from zoo, eval, tasks, curate or the command-line package (megazoo/), zoo
nothing from eval, tasks, curate or the CLI, eval nothing from tasks, curate or the CLI. A task
package imports no other task package, nothing from curate, the CLI or the `megazoo task`
dispatcher (tasks/cli.py): what two tasks share lives below tasks/ (DESIGN.md 3.5). Every import
statement counts: at module level or inside a function, `import x` or `from x import y`, relative
ones resolved. Core reaches models and tasks only through entry points (a string in pyproject.toml,
not an import). The module lists come from the folders: the CLI is every module of megazoo/, the
tasks are the packages under tasks/, so a new task or command is covered without an edit here."""

import ast
import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[1]
# repository folder -> the package it installs as (setup.py ROOTS)
PACKAGES = {"core": "megazoo.core", "zoo": "megazoo.zoo", "eval": "megazoo.eval", "tasks": "megazoo.tasks",
            "curate": "megazoo.curate", "megazoo": "megazoo"}


def cli_modules(root: pathlib.Path) -> tuple[str, ...]:
    """The command-line package: the modules of megazoo/ (its __init__ is only the version)."""
    return tuple(sorted(f"megazoo.{p.stem}" for p in (root / "megazoo").glob("*.py") if p.stem != "__init__"))


def task_packages(root: pathlib.Path) -> tuple[str, ...]:
    """The task packages: the folders under tasks/ with an __init__.py."""
    return tuple(sorted(p.parent.name for p in (root / "tasks").glob("*/__init__.py")))


def dispatcher_modules(root: pathlib.Path) -> tuple[str, ...]:
    """The modules directly in tasks/ (the `megazoo task` dispatcher, tasks/cli.py): command-line code."""
    return tuple(sorted(f"megazoo.tasks.{p.stem}" for p in (root / "tasks").glob("*.py") if p.stem != "__init__"))


def forbidden(root: pathlib.Path) -> dict[str, tuple[str, ...]]:
    """Folder (relative to root, scanned recursively) -> the packages its modules must not import."""
    cli = cli_modules(root)
    rules = {
        "core": ("megazoo.zoo", "megazoo.eval", "megazoo.tasks", "megazoo.curate") + cli,
        "zoo": ("megazoo.eval", "megazoo.tasks", "megazoo.curate") + cli,
        "eval": ("megazoo.tasks", "megazoo.curate") + cli,
        "curate": ("megazoo.tasks",) + cli,
    }
    tasks = task_packages(root)
    for name in tasks:
        others = tuple(f"megazoo.tasks.{t}" for t in tasks if t != name)
        rules[f"tasks/{name}"] = others + dispatcher_modules(root) + ("megazoo.curate",) + cli
    return rules


def module_name(root: pathlib.Path, path: pathlib.Path) -> tuple[str, bool]:
    """(dotted name, is a package __init__) of a file under one of the PACKAGES folders."""
    folder, *rest = path.relative_to(root).with_suffix("").parts
    parts = PACKAGES[folder].split(".") + rest
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def imported_names(source: str, name: str, is_package: bool, label: str) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in `source`. `from x import y` gives x, or x.y
    when x is a parent package (y may be a submodule: `from megazoo import zoo`)."""
    package = name if is_package else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source, filename=label)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: drop one trailing component per extra dot
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)] + ([base] if base else []))
            found += [(node.lineno, base)]
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names if alias.name != "*"]
    return sorted(found)  # in line order (ast.walk visits nested statements last)


def _is_within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def find_violations(root: pathlib.Path) -> list[str]:
    """`file:line: imports X (LAYER must not import PACKAGE)` for each import against the grain."""
    out = []
    for layer, banned in forbidden(root).items():
        for path in sorted((root / layer).rglob("*.py")):
            label = path.relative_to(root).as_posix()
            name, is_package = module_name(root, path)
            reported = set()  # one line per statement: `from megazoo.zoo import a, b` is one finding
            for line, imported in imported_names(path.read_text(), name, is_package, label):
                bad = next((b for b in banned if _is_within(imported, b)), None)
                if bad and line not in reported:
                    reported.add(line)
                    out.append(f"{label}:{line}: imports {imported} ({layer} must not import {bad})")
    return out


def copy_sources(root: pathlib.Path, *folders: str) -> None:
    """The .py files of `folders` of this checkout, copied under `root` (data files are not needed)."""
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            target = root / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)


def plant(path: pathlib.Path, *lines: str) -> list[int]:
    """Append `lines` to the file; their line numbers."""
    old = path.read_text().splitlines()
    path.write_text("\n".join(old + list(lines)) + "\n")
    return list(range(len(old) + 1, len(old) + len(lines) + 1))


def test_imports_point_one_way():
    assert len(list((ROOT / "core").rglob("*.py"))) > 10, "core/ not found"
    violations = find_violations(ROOT)
    assert not violations, "imports against the layering (core <- zoo <- eval <- tasks):\n" + "\n".join(violations)


def test_config_and_models_do_not_import_each_other_both_ways():
    """config.py may call the entry-point lookup in models.py; models.py never imports config.py."""
    path = ROOT / "core" / "train" / "models.py"
    imported = {m for _, m in imported_names(path.read_text(), "megazoo.core.train.models", False, "models.py")}
    assert not any(_is_within(m, "megazoo.core.train.config") for m in imported), sorted(imported)


def test_the_checker_catches_a_core_module_importing_zoo(tmp_path):
    """Plant imports against the grain in a copy of a real core module and in a relative form."""
    copy_sources(tmp_path, "megazoo")  # the CLI modules are read from megazoo/
    copy = tmp_path / "core" / "train" / "config.py"
    copy.parent.mkdir(parents=True)
    shutil.copy(ROOT / "core" / "train" / "config.py", copy)
    clean = find_violations(tmp_path)
    assert clean == []
    lines = copy.read_text().splitlines()
    lines.append("def _planted():")
    lines.append("    from megazoo.zoo.gpt import builder  # against the grain, inside a function")
    lines.append("from ...tasks import race")  # relative: megazoo.core.train -> megazoo.tasks
    lines.append("import megazoo.cli")
    copy.write_text("\n".join(lines) + "\n")
    n = len(lines)
    assert find_violations(tmp_path) == [
        f"core/train/config.py:{n - 2}: imports megazoo.zoo.gpt (core must not import megazoo.zoo)",
        f"core/train/config.py:{n - 1}: imports megazoo.tasks (core must not import megazoo.tasks)",
        f"core/train/config.py:{n}: imports megazoo.cli (core must not import megazoo.cli)",
    ]


def test_the_checker_reads_zoo_and_eval_rules(tmp_path):
    (tmp_path / "zoo").mkdir()
    (tmp_path / "eval" / "metrics").mkdir(parents=True)
    (tmp_path / "zoo" / "x.py").write_text("from megazoo.core.train import config\nfrom .. import eval\n")
    (tmp_path / "eval" / "metrics" / "__init__.py").write_text(
        "from megazoo.zoo import io\nfrom ...tasks.race import cli\n")
    assert find_violations(tmp_path) == [
        "zoo/x.py:2: imports megazoo.eval (zoo must not import megazoo.eval)",
        "eval/metrics/__init__.py:2: imports megazoo.tasks.race (eval must not import megazoo.tasks)",
    ]


def test_the_module_lists_come_from_the_folders():
    assert "megazoo.cli" in cli_modules(ROOT) and "megazoo.__main__" in cli_modules(ROOT)
    assert "megazoo.__init__" not in cli_modules(ROOT)
    assert {"race", "story", "biomed", "synthetic_qa"} <= set(task_packages(ROOT))
    assert "cli" not in task_packages(ROOT) and "megazoo.tasks.cli" in dispatcher_modules(ROOT)


def test_the_checker_catches_imports_between_tasks_and_into_curate_and_the_cli(tmp_path):
    """Plant, in a copy of the real tasks/, zoo/ and megazoo/: task -> another task (absolute and
    relative), task -> curate, task -> the CLI and the dispatcher, zoo -> a task; a task importing
    itself is fine."""
    copy_sources(tmp_path, "tasks", "zoo", "megazoo")
    before = find_violations(tmp_path)
    race = plant(tmp_path / "tasks" / "race" / "builder.py",
                 "from megazoo.tasks.story import x",
                 "def _planted():",
                 "    import megazoo.curate.blend  # inside a function",
                 "from megazoo.cli import main",
                 "from ..biomed.inputs import encode_ner",  # relative: megazoo.tasks.race -> megazoo.tasks.biomed
                 "from megazoo.tasks.cli import available_tasks",
                 "from megazoo.tasks.race.data import load_race",  # itself: allowed
                 "from . import inputs")  # itself, relative: allowed
    story = plant(tmp_path / "tasks" / "story" / "ranker_builder.py", "from megazoo import quickstart")
    zoo = plant(tmp_path / "zoo" / "heads" / "choice.py", "from megazoo.tasks.race import y")
    found = [v for v in find_violations(tmp_path) if v not in before]
    assert found == [
        f"zoo/heads/choice.py:{zoo[0]}: imports megazoo.tasks.race (zoo must not import megazoo.tasks)",
        f"tasks/race/builder.py:{race[0]}: imports megazoo.tasks.story "
        f"(tasks/race must not import megazoo.tasks.story)",
        f"tasks/race/builder.py:{race[2]}: imports megazoo.curate.blend (tasks/race must not import megazoo.curate)",
        f"tasks/race/builder.py:{race[3]}: imports megazoo.cli (tasks/race must not import megazoo.cli)",
        f"tasks/race/builder.py:{race[4]}: imports megazoo.tasks.biomed.inputs "
        f"(tasks/race must not import megazoo.tasks.biomed)",
        f"tasks/race/builder.py:{race[5]}: imports megazoo.tasks.cli (tasks/race must not import megazoo.tasks.cli)",
        f"tasks/story/ranker_builder.py:{story[0]}: imports megazoo.quickstart "
        f"(tasks/story must not import megazoo.quickstart)",
    ]


def test_a_new_task_package_and_a_new_command_are_covered_without_an_edit(tmp_path):
    copy_sources(tmp_path, "megazoo")
    (tmp_path / "tasks" / "newtask").mkdir(parents=True)
    (tmp_path / "tasks" / "newtask" / "__init__.py").write_text("")
    (tmp_path / "tasks" / "other").mkdir()
    (tmp_path / "tasks" / "other" / "__init__.py").write_text("")
    (tmp_path / "tasks" / "other" / "stage.py").write_text("from megazoo.tasks.newtask import z\n")
    (tmp_path / "megazoo" / "newcommand.py").write_text("")
    (tmp_path / "tasks" / "newtask" / "stage.py").write_text("import megazoo.newcommand\nfrom ..other import stage\n")
    assert find_violations(tmp_path) == [
        "tasks/newtask/stage.py:1: imports megazoo.newcommand (tasks/newtask must not import megazoo.newcommand)",
        "tasks/newtask/stage.py:2: imports megazoo.tasks.other (tasks/newtask must not import megazoo.tasks.other)",
        "tasks/other/stage.py:1: imports megazoo.tasks.newtask (tasks/other must not import megazoo.tasks.newtask)",
    ]
