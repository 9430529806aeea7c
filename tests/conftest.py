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
# fixtures make with `tmp_path_factory.mktemp`, once the module is done, unless one of its tests failed
# (there are no session-scoped fixtures: a module's folders are its own).


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
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _measured() -> dict[str, float]:
    """Node id -> measured seconds of the tests listed in tests/slow.txt (made from measured durations by
    tests/slow_list.py; a line is `SECONDS NODE_ID`, or a bare node id)."""
    from pathlib import Path

    path = Path(__file__).with_name("slow.txt")
    out = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.strip() and not line.startswith("#"):
            first, _, rest = line.strip().partition(" ")
            try:
                out[rest.strip()] = float(first)
            except ValueError:
                out[line.strip()] = 0.0
    return out


def pytest_collection_modifyitems(config, items):
    measured = _measured()
    for item in items:
        if item.nodeid in measured:
            item.add_marker(pytest.mark.slow)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # with workers (pyproject: -n auto --dist loadfile), files are handed out in this order: the
        # longest first, so that no long file starts last and runs alone at the end
        per_file = {}
        for item in items:
            name = item.nodeid.split("::")[0]
            per_file[name] = per_file.get(name, 0.0) + measured.get(item.nodeid, 0.0)
        items.sort(key=lambda item: -per_file[item.nodeid.split("::")[0]])  # stable: in-file order kept


def _cores() -> int:
    """The cores this process may run on (megazoo.core.train.flops.cpu_count, without importing torch
    into pytest's main process)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: one worker per core, at most 8, and at most one per 4 GiB of available memory (a
    worker may run an 8-rank parity test or a 135M-parameter model beside the other)."""
    cores = _cores()
    try:
        with open("/proc/meminfo") as f:
            available = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:")) / 2**20
    except (OSError, StopIteration, ValueError):
        available = 4.0 * cores
    return max(1, min(cores, 8, int(available // 4)))


def pytest_configure(config):
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:  # torch's threads shared out between the workers, so two workers do not fight over 2 cores
        import torch

        torch.set_num_threads(max(1, _cores() // int(workers)))
