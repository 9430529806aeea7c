"""The output policy: every command declares what it reads and what it writes, and nothing it did
not make is ever lost.

A command declares its path arguments on its parser:

    input_arg(parser, "--data", help="the test file")
    output_arg(parser, "--out", help="FILE.json", also=lambda p: [p.with_suffix(".predictions.json")])
    output_arg(parser, "out", kind="folder", help="the folder to write")

and the one dispatcher (`megazoo COMMAND`, `megazoo task NAME STAGE`) calls `enforce(parser, args)`
after parsing and before the command runs. Commands whose outputs come from a config file (a run
directory, a suite's results) call `check_paths` themselves once the config is read. The rules:

- every path is resolved (`..`, links) before anything is done, and outputs are handed to the
  command resolved;
- an output equal to an input, containing an input, or inside an input folder is refused (an input
  may allow outputs inside it, as a run folder does for its evaluations);
- an output that is, or contains, the working directory, the home folder or `/` is refused, with
  or without --overwrite;
- an existing non-empty output is refused without --overwrite (a resumable output, such as a run
  directory or a sample file that is continued, is the exception);
- two outputs of one command on the same path are refused.

Writers then write through `atomic_file` / `atomic_folder` (core/fs/atomic.py): a scratch name made
by the command itself, the old content moved aside and removed only after the new one is complete,
and a killed run's leftovers removed by the next run. Refusals are `OutputRefused` (a ValueError:
exit code 2, one line, nothing changed).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

ATTR = "megazoo_io"  # the attribute on an argparse action that declares its role


class OutputRefused(ValueError):
    """An output that would replace, damage or silently overwrite something (nothing was changed)."""


@dataclass(frozen=True)
class PathRole:
    """What a path argument is: an input it reads, or an output it writes.

    kind: file | folder | prefix (the output is the files named by `also`, e.g. P.bin and P.idx) |
    any. also: the further outputs derived from the value (a predictions file beside FILE.json).
    resumable: an existing output is continued, not replaced. inside_ok: (inputs) outputs may be
    written inside this folder (a run folder holding its evaluations). hf: (inputs) the value may
    also be a Hugging Face dataset, and `hf:NAME[:CONFIG][@SPLIT]` is a Hub id, not a path."""

    role: str
    kind: str = "any"
    also: Callable[[Path], Iterable[Path]] | None = None
    resumable: bool = False
    inside_ok: bool = False
    hf: bool = False


HF_PREFIX = "hf:"  # a Hub id where an input is declared with hf=True (eval/readers/hf_source.py)
HF_HELP = (" (or the same data as a Hugging Face dataset: a save_to_disk folder, parquet/arrow files, or "
           "hf:NAME[:CONFIG][@SPLIT])")


@dataclass(frozen=True)
class Declared:
    label: str  # the flag or positional as the user typed it, for messages
    path: str
    role: PathRole


def _add(parser, flags, role: PathRole, kw) -> argparse.Action:
    action = parser.add_argument(*flags, **kw)
    setattr(action, ATTR, role)
    return action


def input_arg(parser, *flags: str, kind: str = "any", inside_ok: bool = False, hf: bool = False,
              **kw) -> argparse.Action:
    """`parser.add_argument` for a path the command reads. hf: the reader also takes a Hugging Face
    dataset, `hf:NAME` included (said in the help; an `hf:` value is not checked as a path)."""
    if hf and kw.get("help"):
        kw["help"] += HF_HELP
    return _add(parser, flags, PathRole("input", kind, inside_ok=inside_ok, hf=hf), kw)


def output_arg(parser, *flags: str, kind: str = "file", also: Callable[[Path], Iterable[Path]] | None = None,
               resumable: bool = False, **kw) -> argparse.Action:
    """`parser.add_argument` for a path the command writes; adds `--overwrite` if the parser has none."""
    action = _add(parser, flags, PathRole("output", kind, also=also, resumable=resumable), kw)
    root = _root(parser)
    if "--overwrite" not in root._option_string_actions:
        root.add_argument("--overwrite", action="store_true",
                          help="replace existing outputs (the old content is removed only once the new one is complete)")
    return action


def _root(parser):
    """The parser or group to add `--overwrite` to (not a mutually exclusive group)."""
    return getattr(parser, "_container", parser)


def resolve(path: str | os.PathLike) -> Path:
    """The absolute path with `..` and links resolved (a missing tail is taken as written)."""
    return Path(os.path.realpath(os.path.abspath(os.path.expanduser(os.fspath(path)))))


def _within(child: Path, folder: Path) -> bool:
    return folder == child or folder in child.parents


def _nonempty(path: Path) -> bool:
    if path.is_dir():
        return any(path.iterdir())
    return path.exists() and path.stat().st_size > 0


def output_paths(item: Declared) -> list[Path]:
    """Every path an output declaration writes (the value itself unless a prefix, then `also`)."""
    base = resolve(item.path)
    paths = [] if item.role.kind == "prefix" else [base]
    if item.role.also is not None:
        paths += [resolve(p) for p in item.role.also(base)]
    return paths


def check_paths(inputs: Sequence[Declared], outputs: Sequence[Declared], overwrite: bool = False) -> None:
    """Refuse (OutputRefused) any output that breaks the policy; see the module docstring."""
    protected = [resolve(p) for p in (Path.cwd(), Path.home(), Path("/"))]
    ins = [(item, resolve(item.path)) for item in inputs if os.path.lexists(resolve(item.path))]
    seen: dict[Path, str] = {}
    for out in outputs:
        if not out.path.strip() or "\0" in out.path:
            raise OutputRefused(f"{out.label} {out.path!r} is not a path; give the file or folder to write "
                                "(nothing was changed)")
        for path in output_paths(out):
            shown = f"{out.label} {out.path}" + ("" if path == resolve(out.path) else f" (writes {path.name})")
            if path in seen:
                raise OutputRefused(f"{shown} is written twice (also by {seen[path]}); give them different paths "
                                    "(nothing was changed)")
            seen[path] = out.label
            for place in protected:
                if _within(place, path):
                    raise OutputRefused(f"{shown} is or contains {place}; writing it would replace that folder. "
                                        "Choose a new folder for the output (nothing was changed)")
            for item, src in ins:
                relation = None
                if src == path:
                    relation = "is the input"
                elif _within(src, path):
                    relation = "contains the input"
                elif _within(path, src) and src.is_dir() and not item.role.inside_ok:
                    relation = "lies inside the input folder"
                if relation:
                    raise OutputRefused(f"{shown} {relation} {item.label} {item.path}; writing it would replace or "
                                        "damage the input. Choose an output outside it (nothing was changed)")
            if out.role.kind == "folder" and path.exists() and not path.is_dir():
                raise OutputRefused(f"{shown} is a file, not a folder; choose a folder (nothing was changed)")
            if out.role.kind in ("file", "prefix") and path.is_dir():
                raise OutputRefused(f"{shown} is a folder; give a file name (nothing was changed)")
            if not overwrite and not out.role.resumable and _nonempty(path):
                raise OutputRefused(f"{shown} exists and is not empty; choose another path or pass --overwrite to "
                                    "replace it (nothing was changed)")


def _label(action: argparse.Action) -> str:
    return action.option_strings[-1] if action.option_strings else (action.metavar or action.dest).upper()


def _chosen_actions(parser: argparse.ArgumentParser, args: argparse.Namespace):
    """The actions of `parser` and of the subcommand chosen in `args` (recursively)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                yield from _chosen_actions(action.choices[chosen], args)
        else:
            yield action


def declared(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[Declared]:
    """The paths declared on `parser` (and on the subcommand chosen in `args`) with their values."""
    found: list[Declared] = []
    for action in _chosen_actions(parser, args):
        role = getattr(action, ATTR, None)
        value = getattr(args, action.dest, None)
        if role is None or value is None:
            continue
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if role.hf and isinstance(v, str) and v.startswith(HF_PREFIX):
                continue  # a Hub id: nothing on disk to protect
            if isinstance(v, (str, os.PathLike)) and (os.fspath(v) != "" or role.role == "output"):
                found.append(Declared(_label(action), os.fspath(v), role))
    return found


def enforce(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check the declared paths of a parsed command line, then hand its outputs over resolved."""
    items = declared(parser, args)
    outputs = [d for d in items if d.role.role == "output"]
    if not outputs:
        return
    check_paths([d for d in items if d.role.role == "input"], outputs, bool(getattr(args, "overwrite", False)))
    for action in _chosen_actions(parser, args):
        role = getattr(action, ATTR, None)
        value = getattr(args, action.dest, None)
        if role is not None and role.role == "output" and isinstance(value, str) and value:
            setattr(args, action.dest, str(resolve(value)))
