"""Where the per-shard tasks run: in this process (the default) or on a Dask cluster.

Both executors offer the same four calls, so every stage is written once:
    map(fn, argument_tuples, desc)   run fn(*args) per item, results in item order, with a progress bar
    submit(fn, *args) / gather(handles)   one task whose arguments may be earlier handles (Dask
                                     futures stay on the workers: fuzzy dedup's band groups read
                                     every partition's signatures there, not in this process)
    share(obj)                       a read-only object every task needs (broadcast once to workers)

`DaskExecutor` connects to `--scheduler ADDRESS` (waiting at most `timeout` seconds, then one clear
error) or starts a LocalCluster of N worker processes (one thread each) for `--dask-workers N`.
"""

from __future__ import annotations

import os
import sys

from megazoo.core.verbosity import shows_progress
from megazoo.curate.errors import CurateError


def _bar(total: int, desc: str, progress: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="shard", disable=not shows_progress(progress), file=sys.stderr, leave=False)


class LocalExecutor:
    workers = 1
    kind = "local"

    def __init__(self, progress: bool = True):
        self.progress = progress

    def map(self, fn, items, desc: str = ""):
        out = []
        with _bar(len(items), desc, self.progress) as bar:
            for args in items:
                out.append(fn(*args))
                bar.update(1)
        return out

    def submit(self, fn, *args):
        return fn(*args)

    def gather(self, handles):
        return list(handles)

    def share(self, obj):
        return obj

    def close(self):
        pass


class DaskExecutor:
    kind = "dask"

    def __init__(self, address: str | None = None, workers: int | None = None, timeout: float = 10.0,
                 progress: bool = True):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as err:  # pragma: no cover - declared dependency
            raise CurateError(f"the Dask path needs dask[distributed] installed ({err})") from None
        self.progress = progress
        self.cluster = None
        if address:
            try:
                self.client = Client(address, timeout=f"{timeout}s", set_as_default=False)
            except (OSError, TimeoutError) as err:
                raise CurateError(
                    f"--scheduler {address}: no Dask scheduler answered within {timeout:g} s ({type(err).__name__}); "
                    "start one (`dask scheduler`, then `dask worker ADDRESS`), check the address, or leave "
                    "--scheduler out to run in this process") from None
        else:
            self.cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=True,
                                        dashboard_address=None)
            self.client = Client(self.cluster, set_as_default=False)
        self.workers = len(self.client.scheduler_info().get("workers", {})) or (workers or 1)

    def map(self, fn, items, desc: str = ""):
        from dask.distributed import as_completed

        futures = [self.client.submit(fn, *args, pure=False) for args in items]
        with _bar(len(futures), desc, self.progress) as bar:
            for _ in as_completed(futures, loop=self.client.loop):
                bar.update(1)
        return self.client.gather(futures)

    def submit(self, fn, *args):
        return self.client.submit(fn, *args, pure=False)

    def gather(self, handles):
        return self.client.gather(list(handles))

    def share(self, obj):
        # in a list, so a dict is sent as one object (scatter would make a future per key)
        return self.client.scatter([obj], broadcast=True)[0]

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def local_worker_limit() -> int:
    """The most local Dask worker processes worth starting here: 4 per CPU this process may use (more
    only thrash the machine; a bigger pool belongs on a cluster, through --scheduler)."""
    return 4 * len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 4 * (os.cpu_count() or 1)


def check_local_workers(workers: int, where: str) -> None:
    """Refuse a local cluster larger than `local_worker_limit()`, naming the flag or key."""
    limit = local_worker_limit()
    if workers > limit:
        raise CurateError(f"{where} {workers}: a local cluster of more than {limit} worker processes (4 per CPU "
                          f"here) would only thrash this machine; give at most {limit}, or start a Dask cluster "
                          "and pass --scheduler ADDRESS")


def make_executor(scheduler: str | None = None, dask_workers: int | None = None, timeout: float = 10.0,
                  progress: bool = True):
    """The single-process executor unless a scheduler address or a local Dask worker count is given."""
    if scheduler or dask_workers:
        return DaskExecutor(scheduler, dask_workers, timeout, progress)
    return LocalExecutor(progress)
