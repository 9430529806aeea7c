"""Shared by the benchmarks: replace one benchmark's section of bench/RESULTS.md (or append it)."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def write_section(heading: str, text: str, path: Path = RESULTS) -> None:
    """`text` must start with `heading` (a "## ..." line); the section runs to the next "## "."""
    doc = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    if heading in doc:
        start = doc.index(heading)
        nxt = doc.find("\n## ", start + len(heading))
        doc = doc[:start] + text.rstrip("\n") + "\n" + ("\n" + doc[nxt + 1:] if nxt >= 0 else "")
    else:
        doc = doc.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n"
    path.write_text(doc, encoding="utf-8")
