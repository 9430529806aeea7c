"""Run a function on N local ranks (gloo on CPU, nccl on GPU): the test and benchmark harness.

`spawn(fn, world_size, *args)` starts N processes, initialises torch.distributed
in each, calls fn(*args) and returns the list of per-rank results (picklable values). A rank that
raises fails the whole call with its traceback, together with those of the ranks that fail within
a few seconds of it (ranks that time out together report in any order); a run that outlives
`timeout` is killed and reported, so a hang becomes a failure. Each rank uses one torch thread by
default, so N ranks fit on few cores.
"""

from __future__ import annotations

import datetime
import multiprocessing as mp
import os
import pickle
import queue
import socket
import sys
import time
import traceback

# how long spawn() keeps listening for other ranks' failures after the first one
FAILURE_GRACE_S = 5.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _context():
    """The start method: "forkserver" with torch imported once in the server, so a rank starts by a
    fork instead of importing torch again (8 ranks on 2 cores: about 0.3 s once the server runs, 2-3 s for
    the launch that starts it, against 18-21 s re-importing torch on busy cores);
    "spawn" where a platform has no forkserver. Either way a rank runs in a fresh process whose
    working directory, sys.path and environment are the caller's at the time of the call."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch"])  # the server only imports: it runs no torch operation, so forks are safe
    return ctx


def _worker(rank, world_size, port, fn, payload, results, threads, dist_timeout, environ):
    os.environ.clear()  # a forkserver child starts with the server's environment: take the caller's
    os.environ.update(environ)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world_size),
                      MEGAZOO_DIST_TIMEOUT=str(dist_timeout))
    try:
        import torch
        import torch.distributed as dist

        from megazoo.core.parallel.device import pick_backend

        args = pickle.loads(payload)  # the caller's arguments, pickled by spawn

        torch.set_num_threads(threads)
        # the parent already listens on `port` (its TCPStore), so no rank races for a free port
        store = dist.TCPStore("127.0.0.1", port, world_size, is_master=False,
                              timeout=datetime.timedelta(seconds=dist_timeout))
        dist.init_process_group(pick_backend(), store=store, rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=dist_timeout))
        try:
            out = fn(*args)
            # plain pickle copies tensor data into the message; the queue's own pickler would
            # share file descriptors that vanish when this process exits
            results.put((rank, "ok", pickle.dumps(out)))
        finally:
            dist.destroy_process_group()
    except BaseException:  # report everything, including SystemExit from a bad config
        results.put((rank, "error", traceback.format_exc()))


class RankFailure(RuntimeError):
    pass


def spawn(fn, world_size: int, *args, timeout: float = 300.0, threads: int = 1, dist_timeout: float = 120.0):
    """Run fn(*args) on `world_size` ranks; return [result of rank 0, rank 1, ...]."""
    import torch.distributed as dist

    ctx = _context()
    results = ctx.Queue()
    # port 0: the OS picks a free port for the store the ranks rendezvous on
    store = dist.TCPStore("127.0.0.1", 0, world_size, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=dist_timeout))
    port = store.port
    environ = dict(os.environ)
    # the arguments travel as plain-pickle bytes, tensors copied: multiprocessing's own pickler would hand
    # each tensor's storage over as a file descriptor, and a forkserver passes at most 256 per process
    payload = pickle.dumps(args)
    procs = [ctx.Process(target=_worker, args=(r, world_size, port, fn, payload, results, threads, dist_timeout, environ),
                         daemon=True) for r in range(world_size)]
    for p in procs:
        p.start()
    out, errors = {}, []
    errors_since = 0.0  # set when the first rank fails
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=timeout)
    try:
        while len(out) + len(errors) < world_size:
            remaining = (deadline - datetime.datetime.now()).total_seconds()
            if errors:
                # after the first failure, wait a moment for the others: ranks that time out
                # together report in any order, and the root cause may come second
                remaining = min(remaining, (errors_since + FAILURE_GRACE_S - time.monotonic()))
                if remaining <= 0:
                    break
            elif remaining <= 0:
                raise RankFailure(f"timed out after {timeout:.0f}s waiting for ranks "
                                  f"{sorted(set(range(world_size)) - set(out))} (a hang, or too slow)")
            try:
                rank, status, value = results.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                dead = [r for r, p in enumerate(procs) if p.exitcode not in (None, 0) and r not in out
                        and r not in {e[0] for e in errors}]
                if dead and not errors:
                    raise RankFailure(f"rank(s) {dead} died with exit codes {[procs[r].exitcode for r in dead]}")
                continue
            if status == "ok":
                out[rank] = pickle.loads(value)  # our own child's bytes
            else:
                if not errors:
                    errors_since = time.monotonic()
                errors.append((rank, value))
    finally:
        for p in procs:
            p.join(timeout=5 if not errors else 0.5)
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        del store
    if errors:
        raise RankFailure("\n".join(f"rank {rank} failed:\n{tb}" for rank, tb in errors))
    return [out[r] for r in range(world_size)]


# ---- local launches for the command line (torch.distributed's elastic launcher, as torchrun) -----

def under_launcher() -> bool:
    """True in a rank of a multi-process job started by torchrun (or another launcher that sets
    RANK and WORLD_SIZE)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ


def setup_rank() -> tuple[int, int]:
    """In a rank started by a launcher (or a single process): initialise torch.distributed and share
    the machine's cores between the local ranks. Returns (rank, world_size)."""
    import torch

    from megazoo.core.parallel.context import init_distributed

    rank, world = init_distributed()
    if world > 1:
        _interrupt_once()
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    if world > 1 and "OMP_NUM_THREADS" not in os.environ:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        torch.set_num_threads(max(1, cores // local))
    return rank, world


def teardown_rank(world: int) -> None:
    import torch.distributed as dist

    if world > 1 and dist.is_initialized():
        dist.destroy_process_group()


def launch_local(entry, payload, nproc: int, prog: str, run_dir=None) -> int:
    """Run entry(payload) on `nproc` local ranks with torch's elastic launcher. Returns 0, 1 when a
    rank failed, or 130 after Ctrl-C (the launcher stops every rank; the message says where the
    partial run is)."""
    import uuid

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=nproc, run_id=str(uuid.uuid4()),
                          rdzv_backend="c10d", rdzv_endpoint=f"127.0.0.1:{free_port()}", max_restarts=0,
                          monitor_interval=0.5)
    try:
        elastic_launch(config, entry)(payload)
    except ChildFailedError as e:
        print(f"{prog}: error: {len(e.failures)} rank(s) failed (messages above)", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SignalException):
        where = f" The partial run is in {run_dir} (its last complete checkpoint, if any, resumes with " \
                "checkpoint.resume=auto)" if run_dir is not None else ""
        print(f"\n{prog}: interrupted; all {nproc} ranks stopped.{where}", file=sys.stderr)
        return 130
    return 0


def run_layout(payload: dict, here, prog: str) -> int:
    """here(payload, ctx) in this process when payload's tp x pp is 1 (ctx None), else on tp x pp
    local ranks, each with its ParallelContext (a stage command that runs a model at a layout: every
    rank computes the same result, rank 0 writes). `here` must be module level (ranks import it) and
    return 0; another code makes the rank exit 2."""
    nproc = payload["tp"] * payload["pp"]
    if nproc == 1:
        return here(payload, None)
    return launch_local(_layout_rank, (payload, here), nproc, prog)


def _interrupt_once() -> None:
    """A rank stops on the first Ctrl-C and ignores the next ones: a terminal's Ctrl-C reaches every
    process of the group and the launcher then forwards another SIGINT, which would otherwise land
    in the rank's clean-up (a progress bar closing, a checkpoint writer) and print a traceback."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum, frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)


def _layout_rank(job) -> None:
    from megazoo.core.parallel.context import ParallelConfig, ParallelContext

    payload, here = job
    _, world = setup_rank()
    try:
        ctx = ParallelContext.build(ParallelConfig(tp=payload["tp"], pp=payload["pp"]))
        if here(payload, ctx) != 0:
            raise SystemExit(2)
    finally:
        teardown_rank(world)
