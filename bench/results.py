"""Shared by the benchmarks: replace one benchmark's section of bench/RESULTS.md (or append it),
count CPU seconds, and run a megazoo command in this process."""

from __future__ import annotations

import resource
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


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        r = resource.getrusage(who)
        total += r.ru_utime + r.ru_stime
    return total


def megazoo(*argv: str) -> None:
    """`megazoo ARGV` in this process (echoed first); a non-zero exit stops the benchmark."""
    from megazoo.cli import main

    print("$ megazoo " + " ".join(argv), flush=True)
    code = main(list(argv))
    if code:
        raise SystemExit(f"megazoo {' '.join(argv)} failed with exit code {code}")
