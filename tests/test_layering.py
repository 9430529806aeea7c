"""Dependencies point one way (DESIGN.md: core <- zoo <- eval <- tasks): core imports nothing from
zoo, eval, tasks or the command-line package (megazoo/), zoo nothing from eval or tasks, eval
nothing from tasks. Every import statement counts: at module level or inside a function, `import x`
or `from x import y`, relative ones resolved. Core reaches models and tasks only through entry
points (a string in pyproject.toml, not an import)."""

import ast
import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[1]
# repository folder -> the package it installs as (setup.py ROOTS)
PACKAGES = {"core": "megazoo.core", "zoo": "megazoo.zoo", "eval": "megazoo.eval", "tasks": "megazoo.tasks",
            "curate": "megazoo.curate", "megazoo": "megazoo"}
# the command-line package: the modules of megazoo/ itself (its __init__ is only the version)
CLI = ("megazoo.cli", "megazoo.quickstart", "megazoo.quickstart_board", "megazoo.quickstart_report",
       "megazoo.quickstart_task", "megazoo.quickstart_zoo", "megazoo.__main__", "megazoo.lm_eval_hook")
FORBIDDEN = {
    "core": ("megazoo.zoo", "megazoo.eval", "megazoo.tasks", "megazoo.curate") + CLI,
    "zoo": ("megazoo.eval", "megazoo.tasks", "megazoo.curate"),
    "eval": ("megazoo.tasks", "megazoo.curate"),
    "curate": ("megazoo.tasks",) + CLI,
}


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
    for layer, banned in FORBIDDEN.items():
        for path in sorted((root / layer).rglob("*.py")):
            label = str(path.relative_to(root))
            name, is_package = module_name(root, path)
            reported = set()  # one line per statement: `from megazoo.zoo import a, b` is one finding
            for line, imported in imported_names(path.read_text(), name, is_package, label):
                bad = next((b for b in banned if _is_within(imported, b)), None)
                if bad and line not in reported:
                    reported.add(line)
                    out.append(f"{label}:{line}: imports {imported} ({layer} must not import {bad})")
    return out


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
