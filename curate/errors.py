"""The one error type of `megazoo curate`: a user's mistake (a malformed shard, a missing key, a bad
setting, a scheduler that does not answer). It is a ValueError, so the command-line boundary
(megazoo/cli.py, core/train/user_errors.py) prints it as one line and exits with code 2."""

from __future__ import annotations


class CurateError(ValueError):
    """`where: problem (fix)` on one line."""
