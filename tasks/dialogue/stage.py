"""What the dialogue stages share: the errors they turn into one line and exit code 2."""

from __future__ import annotations

import sys

ERRORS = (ValueError, FileNotFoundError)


def fail(prog: str, e) -> int:
    from megazoo.core.train.user_errors import one_line

    print(f"{prog}: error: {one_line(str(e))}", file=sys.stderr)
    return 2
