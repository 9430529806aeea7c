"""A CI-sized sample of the generated fuzz run (tests/fuzz_cli.py; the full run: `python -m tests.fuzz_cli`)."""

from __future__ import annotations

import json

import pytest

from tests.fuzz_cli import fuzz


@pytest.mark.timeout(900)
def test_generated_invocations_find_nothing(tmp_path):
    report = fuzz(n=120, seed=7, timeout=120, root=tmp_path)
    assert report["invocations"] == 120
    assert not report["findings"], json.dumps(report["findings"][:5], indent=1)[:6000]
