"""What every task package must have (DESIGN.md 3.5), checked from the files so that a planted
violation in a copy of the tree is caught the same way (tests/test_task_contract.py):

- stage verbs from one vocabulary (tasks/cli.py VERBS) or the package's documented EXTRAS, and an
  `evaluate` stage;
- a builder registered on the trainer ("megazoo.tasks" entry point) or `PROMPTING_ONLY = True`;
- a leaderboard entry ("megazoo.evaluations" entry point into the package's leaderboard module);
- a recipe script recipes/NAME.sh;
- a row in docs/tasks.md's package table naming every stage;
- none of the core's jobs done again inside tasks/: no `.backward(`, no optimizer step, no
  `os.replace`/`.rename(` (core/fs writes), no direct `AutoTokenizer` (core/data/tokenizers, the
  task-evaluation kit and zoo load tokenizers).
"""

from __future__ import annotations

import ast
import pathlib
import re
import tomllib

VERBS = ("data", "train", "evaluate", "sample")  # tasks/cli.py VERBS (checked equal in the test)
BANNED = {
    "backward": "`.backward(`: training is the core trainer's (a builder's loss)",
    "step": "an optimizer step: training is the core trainer's",
    "os.replace": "`os.replace`: write through core/fs (atomic_file, write_json_atomic, atomic_folder)",
    "rename": "`.rename(`: write through core/fs (atomic_file, write_json_atomic, atomic_folder)",
    "AutoTokenizer": "direct `AutoTokenizer`: load tokenizers through core/data/tokenizers, zoo or eval/taskkit",
}


def task_names(root: pathlib.Path) -> list[str]:
    return sorted(p.parent.name for p in (root / "tasks").glob("*/cli.py"))


def _literal_dict_keys(tree: ast.Module, name: str):
    """Keys of the module-level dict literal `name` (None when there is none)."""
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == name and isinstance(getattr(node, "value", None), ast.Dict):
            return [ast.literal_eval(k) for k in node.value.keys]
    return None


def _flag(tree: ast.Module, name: str) -> bool:
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == name:
            return bool(ast.literal_eval(node.value))
    return False


def entry_points(root: pathlib.Path, group: str) -> dict[str, str]:
    data = tomllib.loads((root / "pyproject.toml").read_text())
    return data["project"]["entry-points"].get(group, {})


def docs_row(root: pathlib.Path, task: str) -> str | None:
    for line in (root / "docs" / "tasks.md").read_text().splitlines():
        if line.startswith(f"| `{task}` |"):
            return line
    return None


def banned_calls(path: pathlib.Path, label: str) -> list[str]:
    """`file:line: why` for each banned use in one Python file (code only: strings and comments
    may name them)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=label)):
        found = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, owner = node.func.attr, node.func.value
            owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
            if attr == "backward":
                found = "backward"
            elif attr == "step" and "optim" in owner_name.lower():
                found = "step"
            elif attr == "replace" and owner_name == "os":
                found = "os.replace"
            elif attr == "rename":
                found = "rename"
        elif isinstance(node, ast.Name) and node.id == "AutoTokenizer":
            found = "AutoTokenizer"
        elif isinstance(node, ast.ImportFrom) and any(a.name == "AutoTokenizer" for a in node.names):
            found = "AutoTokenizer"
        if found:
            out.append(f"{label}:{node.lineno}: {BANNED[found]}")
    return out


def violations(root: pathlib.Path) -> list[str]:
    """Every way a task package breaks the contract, one line each (`tasks/NAME: what is missing`)."""
    out = []
    builders = entry_points(root, "megazoo.tasks")
    boards = entry_points(root, "megazoo.evaluations")
    for task in task_names(root):
        where = f"tasks/{task}"
        tree = ast.parse((root / where / "cli.py").read_text())
        stages = _literal_dict_keys(tree, "STAGES") or []
        extras = _literal_dict_keys(tree, "EXTRAS") or []
        for verb in stages:
            if verb not in VERBS and verb not in extras:
                out.append(f"{where}: stage `{verb}` is not a verb of the vocabulary ({', '.join(VERBS)}) and not "
                           f"in the package's EXTRAS table (with what it does)")
        if "evaluate" not in stages:
            out.append(f"{where}: no `evaluate` stage")
        own = f"megazoo.tasks.{task}."
        if task not in builders and not _flag(tree, "PROMPTING_ONLY"):
            out.append(f"{where}: no builder on the trainer (entry point megazoo.tasks: {task}) and not marked "
                       f"PROMPTING_ONLY = True in cli.py")
        elif task in builders and not builders[task].startswith(own):
            out.append(f"{where}: its megazoo.tasks entry point is outside the package ({builders[task]})")
        if not any(v.startswith(own + "leaderboard:") for v in boards.values()):
            out.append(f"{where}: no leaderboard entry (entry point megazoo.evaluations -> {own}leaderboard:...)")
        if not (root / "recipes" / f"{task}.sh").is_file():
            out.append(f"{where}: no recipe script recipes/{task}.sh")
        row = docs_row(root, task)
        if row is None:
            out.append(f"{where}: no row `| `{task}` | ...` in docs/tasks.md's package table")
        else:
            cells = re.split(r"(?<!\\)\|", row)  # a cell may hold an escaped \| (ict\|supervised)
            named = set(re.findall(r"[a-z][a-z0-9_-]*", cells[2] if len(cells) > 2 else ""))
            missing = [v for v in stages if v not in named]
            if missing:
                out.append(f"{where}: docs/tasks.md's row does not name the stage(s) {', '.join(missing)}")
        for path in sorted(p for p in (root / where).rglob("*.py") if p.is_file()):
            out += banned_calls(path, str(path.relative_to(root)))
    return out
