"""How an error reaches the user: which exceptions are a user's mistake or a runtime failure, and
their one-line message.

Every command ends through `megazoo.cli.main`'s boundary, and every rank through
`run_in_rank` (core/train/commands.py); both ask `classify(error)` here. Known errors become
`(exit code, one line)`: 2 for a mistake in what the user gave (a value, a key, a file that is
missing, malformed or of the wrong kind), 1 for a failure of the run itself (a full disk, an I/O
error, a loss that became NaN). Anything else is a bug and keeps its traceback. MEGAZOO_DEBUG=1 shows
the traceback of every error.

The known errors are the project's own (ConfigError, CheckpointError, the readers' and cards'
errors: all ValueError), the standard library's (ValueError incl. JSON decoding and Unicode
decoding, OSError), YAML's and safetensors'.
"""

from __future__ import annotations

import errno
import os

# OSError numbers that mean "the path the user gave is wrong", not "the machine failed"
USER_ERRNOS = {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EEXIST,
               errno.ENAMETOOLONG, errno.ELOOP, errno.EROFS}


def debug() -> bool:
    """MEGAZOO_DEBUG=1: let every error through with its traceback."""
    return os.environ.get("MEGAZOO_DEBUG", "") not in ("", "0")


def reveal_causes(err: BaseException) -> BaseException:
    """MEGAZOO_DEBUG=1: show, under `err`'s traceback, the errors it was raised from even where the
    code said `raise ... from None` (a reader turning a JSON error into `file:line: problem`), so the
    traceback behind every caught error is there. Returns `err`."""
    seen, e = set(), err
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        e.__suppress_context__ = False
        e = e.__cause__ or e.__context__
    return err


def one_line(text: str) -> str:
    """The message on one line (a multi-line message's lines joined by '; ')."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def yaml_message(path, err) -> str:
    """`FILE:LINE: not valid YAML (problem)` for a yaml.YAMLError met while reading `path`."""
    mark = getattr(err, "problem_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    problem = getattr(err, "problem", None) or str(err)
    return f"{where}: not valid YAML ({one_line(problem)})"


def _oserror_message(err: OSError) -> str:
    reason = err.strerror or str(err)
    if err.filename is None:
        return one_line(reason)
    names = f"{err.filename} -> {err.filename2}" if err.filename2 is not None else str(err.filename)
    return one_line(f"{names}: {reason[:1].lower() + reason[1:]}")


def classify(err: BaseException) -> tuple[int, str] | None:
    """(exit code, one-line message) for a known error; None for a bug (let its traceback show)."""
    import yaml

    if isinstance(err, yaml.YAMLError):
        mark = getattr(err, "problem_mark", None)
        name = getattr(mark, "name", None)
        return 2, yaml_message(name if name and not name.startswith("<") else "a YAML file", err)
    if isinstance(err, OSError):
        return (2 if err.errno in USER_ERRNOS else 1), _oserror_message(err)
    if isinstance(err, ValueError):  # ConfigError, CheckpointError, ReaderError, CardError, JSON, Unicode, ...
        return 2, one_line(str(err) or type(err).__name__)
    kind = type(err)
    if kind.__name__ == "SafetensorError":  # safetensors: a truncated or corrupted .safetensors file
        return 2, one_line(f"not a readable safetensors file ({err})")
    if kind.__name__ == "TrainingStopped":  # core.train.trainer: a non-finite loss or gradient
        return 1, one_line(str(err))
    return None
