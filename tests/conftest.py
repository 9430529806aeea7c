import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import shutil

import pytest

# Disk: a full run writes ~9 GB of checkpoints, exports and a fresh virtual environment under the
# pytest base folder. pyproject keeps a passing test's `tmp_path` only until its teardown
# (tmp_path_retention_policy = "failed"); the fixture below does the same for the folders a module's
# fixtures make with `tmp_path_factory.mktemp`, once the module is done, unless one of its tests failed.
SESSION_FOLDERS = ("megazoo_cache",)  # made by session-scoped fixtures: they live to the end


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    module = getattr(item, "module", None)
    if report.failed and module is not None:
        module.__dict__["_megazoo_failed"] = True
    return report


@pytest.fixture(scope="module", autouse=True)
def _remove_module_folders(request, tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    before = set(base.iterdir())
    yield
    if request.module.__dict__.get("_megazoo_failed"):
        return
    for path in set(base.iterdir()) - before:
        if path.is_dir() and not path.name.startswith(SESSION_FOLDERS):
            shutil.rmtree(path, ignore_errors=True)


def _slow_list() -> set[str]:
    """Node ids listed in tests/slow.txt (made from measured durations by tests/slow_list.py)."""
    from pathlib import Path

    path = Path(__file__).with_name("slow.txt")
    if not path.exists():
        return set()
    return {line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}


def pytest_collection_modifyitems(config, items):
    slow = _slow_list()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
