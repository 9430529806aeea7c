"""What the tests of a command as a user runs it share (tests/test_policy_*.py): run `megazoo ARGV`
in this process, read its one-line refusal, and fingerprint a folder so a test can show that the
inputs and bystander files are byte-identical afterwards."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def run_cli(capsys, *argv) -> tuple[int, str]:
    """(exit code, stderr) of `megazoo ARGV`; argparse's own refusals (SystemExit) included."""
    from megazoo.cli import main

    capsys.readouterr()  # what an earlier call printed is not this run's
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


def one_line(err: str) -> str:
    """The message of a refusal: exactly one line besides argparse's usage line, and no traceback."""
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("usage:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def snapshot(root) -> dict[str, str]:
    """Relative path -> content digest (or 'dir') of everything under `root`."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = "dir"
        for f in filenames:
            p = os.path.join(dirpath, f)
            out[os.path.relpath(p, root)] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out


def refused(capsys, root, *argv) -> str:
    """`megazoo ARGV` must be refused: exit 2, one line, nothing under `root` changed. The line."""
    before = snapshot(root)
    code, err = run_cli(capsys, *argv)
    err = err.strip()
    assert code == 2 and "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert snapshot(root) == before
    return err
