"""The shell commands the documentation shows (issue #41 point 2), found where a reader copies them from.

Two places hold commands:
- fenced code blocks of README.md and docs/*.md: ```bash, ```sh, ```shell, ```console and untagged
  blocks. In an untagged block only lines that start with a command (COMMAND below) count, so the
  diagrams and layouts drawn in such blocks are left alone; in a tagged shell block every line that is
  not a comment counts, so a command of an unknown kind is reported instead of silently dropped. A
  `$ ` prompt is removed; in ```console blocks only the `$ ` lines are commands (the rest is output);
- inline code spans in the table rows of README.md (its "I want to | command" map) that start with a
  command and hold at least one argument.

A `\\` at the end of a line continues the command on the next line; `A && B`, `A ; B` and `A || B`
give one command each (with the same line number); a trailing `# comment` is removed; `\\|` in a
table cell is a plain `|`. Inline spans in prose paragraphs are not commands here: they name
commands in passing (`megazoo train`), and a doc that wants a command checked shows it in a block.

`python -m tests.doc_commands` prints every command found, with where it is.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

# the start of a command line (a fenced block's line or a table cell's span)
COMMAND = re.compile(r"^((megazoo|python3?|lm_eval|torchrun|pip3?|source)(\s|$)|bash recipes/|\.venv/bin/|\./scripts/"
                     r'|eval "\$\(megazoo\s)')
SHELL_TAGS = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
SPAN = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class DocCommand:
    """One command as the docs show it: `text` is the command with continuations joined."""

    file: str  # the markdown file, relative to the repository
    line: int  # 1-based line where the command starts
    text: str
    place: str  # "block" (a fenced block) or "table" (a README table cell)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def split_chain(text: str) -> list[str]:
    """`A && B ; C # note` -> ["A", "B", "C"]: the parts a shell runs one after the other, split
    outside quotes and $(...); a `#` after a space (outside quotes) starts a comment."""
    parts, current, quote, depth, i = [], [], None, 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"' and i + 1 < len(text):
                current.append(text[i:i + 2])
                i += 2
                continue
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif text.startswith("$(", i):
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        elif not depth and ch == "#" and (i == 0 or text[i - 1].isspace()):
            break
        elif not depth and (text.startswith("&&", i) or text.startswith("||", i) or ch == ";"):
            parts.append("".join(current))
            current = []
            i += 1 if ch == ";" else 2
            continue
        current.append(ch)
        i += 1
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _block_commands(lines: list[str], start: int, tag: str) -> list[tuple[int, str]]:
    """(line number, joined text) of the commands of one fenced block whose first content line is
    `lines[start]` (0-based) and that ends at the closing fence."""
    out, i = [], start
    while i < len(lines) and not FENCE.match(lines[i]):
        raw = lines[i].strip()
        first = i + 1
        i += 1
        prompt = raw.startswith("$ ")
        if prompt:
            raw = raw[2:].strip()
        if not raw or raw.startswith("#") or (tag == "console" and not prompt):
            continue
        if tag not in SHELL_TAGS and not COMMAND.match(raw):
            continue  # an untagged block: a diagram or a layout unless the line starts with a command
        while raw.endswith("\\") and i < len(lines) and not FENCE.match(lines[i]):
            raw = raw[:-1].rstrip() + " " + lines[i].strip()
            i += 1
        out.append((first, raw))
    return out


def commands_in(path: Path, root: Path, tables: bool) -> list[DocCommand]:
    """The commands of one markdown file (table spans too when `tables`)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    name = path.relative_to(root).as_posix()
    found: list[DocCommand] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence:
            tag = fence.group(2).lower()
            end = i + 1
            while end < len(lines) and not FENCE.match(lines[end]):
                end += 1
            if tag in SHELL_TAGS or tag == "":
                for line, text in _block_commands(lines, i + 1, tag):
                    found += [DocCommand(name, line, part, "block") for part in split_chain(text)]
            i = end + 1
            continue
        if tables and lines[i].lstrip().startswith("|"):
            for span in SPAN.findall(lines[i]):
                span = span.replace("\\|", "|").strip()
                if COMMAND.match(span) and (len(span.split()) >= 3 or span.startswith("bash ")):
                    found += [DocCommand(name, i + 1, part, "table") for part in split_chain(span)]
        i += 1
    return found


def doc_files(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def extract(root: Path, files: list[Path] | None = None) -> list[DocCommand]:
    """Every command of README.md and docs/*.md (or of `files`), in reading order, duplicates kept
    once (the first place that shows the command)."""
    seen, out = set(), []
    for path in files if files is not None else doc_files(root):
        for cmd in commands_in(path, root, tables=path.name == "README.md" or files is not None):
            if cmd.text not in seen:
                seen.add(cmd.text)
                out.append(cmd)
    return out


if __name__ == "__main__":
    base = Path(__file__).resolve().parents[1]
    for cmd in extract(base, [Path(p).resolve() for p in sys.argv[1:]] or None):
        print(f"{cmd.where:24} {cmd.place:5}  {cmd.text}")
