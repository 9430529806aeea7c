"""The one error type of the data pipeline.

Every bad-input path (a malformed .bin/.idx, a JSONL line without the key, a vocabulary that does
not fit the token dtype, ...) raises DataError with a message that names the file (and the line
where there is one) and says what to do, so the CLI can print it as is.
"""

from __future__ import annotations


class DataError(ValueError):
    """A data file or data option is unusable; the message names the file and the fix."""
