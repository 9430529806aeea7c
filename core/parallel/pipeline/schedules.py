"""Pipeline schedule tables, the point-to-point plan they imply, and a simulator that checks it.

Everything here is pure Python (no torch.distributed): the runtime (runner.py) executes exactly the
tables and plans built here, and the unit tests check them against the published schedules.

Names. With pp ranks and vpp model chunks per rank there are V = pp * vpp virtual stages; chunk c of
pp rank r is virtual stage c * pp + r (Megatron-LM's interleaved layout), so activations travel
rank 0 -> 1 -> ... -> pp-1 -> 0 (next chunk) -> ... and gradients the other way. An action is
("F" | "B", chunk, micro_batch).

Schedules
- "1f1b" (PipeDream-Flush, Narayanan et al. 2021): rank r runs min(pp - r - 1, m) warm-up forwards,
  then alternates one forward and one backward, then drains the remaining backwards. At most
  pp - r micro-batches are in flight on rank r.
- "interleaved" (Narayanan et al. 2021, section 2.2): forwards visit the chunks in groups of pp
  micro-batches (chunk 0 for micro-batches 0..pp-1, chunk 1 for the same, ..., then the next pp
  micro-batches); backwards visit the chunks in reverse. Warm-up is (pp - r - 1) * 2 + (vpp - 1) * pp
  forwards (all of them when m == pp). Needs m to be a multiple of pp.
- "gpipe": all forwards, then all backwards (kept for comparison: m micro-batches in flight).
"""

from __future__ import annotations

from dataclasses import dataclass

Action = tuple  # ("F" | "B", chunk, micro_batch)


class ScheduleError(ValueError):
    """A schedule that cannot run with these numbers (say which and what to change)."""


def check_fits(pp: int, num_microbatches: int, vpp: int = 1) -> None:
    if pp < 1 or vpp < 1 or num_microbatches < 1:
        raise ScheduleError(f"pp ({pp}), vpp ({vpp}) and the number of micro-batches ({num_microbatches}) "
                            "must be positive")
    if vpp > 1 and num_microbatches % pp:
        raise ScheduleError(
            f"the interleaved schedule (vpp={vpp}) needs the number of micro-batches per step to be a "
            f"multiple of pp={pp}, got {num_microbatches}; set train.global_batch so that "
            f"global_batch / (micro_batch * dp) is a multiple of {pp}, or use parallel.vpp=1")


def _one_f_one_b(pp: int, rank: int, m: int) -> list[Action]:
    warmup = min(pp - rank - 1, m)
    out = [("F", 0, i) for i in range(warmup)]
    for i in range(m - warmup):
        out += [("F", 0, warmup + i), ("B", 0, i)]
    out += [("B", 0, i) for i in range(m - warmup, m)]
    return out


def _virtual(k: int, pp: int, vpp: int, forward: bool) -> tuple[int, int]:
    """(chunk, micro_batch) of this rank's k-th forward (or backward) in the interleaved order."""
    group, within = divmod(k, pp * vpp)
    chunk = within // pp
    if not forward:
        chunk = vpp - 1 - chunk
    return chunk, group * pp + within % pp


def _interleaved(pp: int, rank: int, m: int, vpp: int) -> list[Action]:
    total = m * vpp
    warmup = total if m == pp else min(total, (pp - rank - 1) * 2 + (vpp - 1) * pp)
    out = [("F",) + _virtual(k, pp, vpp, True) for k in range(warmup)]
    for k in range(total - warmup):
        out += [("F",) + _virtual(warmup + k, pp, vpp, True), ("B",) + _virtual(k, pp, vpp, False)]
    out += [("B",) + _virtual(k, pp, vpp, False) for k in range(total - warmup, total)]
    return out


def rank_table(pp: int, rank: int, num_microbatches: int, vpp: int = 1, forward_only: bool = False,
               kind: str = "auto") -> list[Action]:
    """The ordered actions of one pp rank. kind: auto (1f1b, or interleaved when vpp > 1) | 1f1b |
    interleaved | gpipe. forward_only keeps the forwards in the same order."""
    check_fits(pp, num_microbatches, vpp)
    if kind == "auto":
        kind = "interleaved" if vpp > 1 else "1f1b"
    if kind == "1f1b":
        if vpp != 1:
            raise ScheduleError(f"the 1f1b schedule runs one chunk per rank; vpp={vpp} needs 'interleaved'")
        table = _one_f_one_b(pp, rank, num_microbatches)
    elif kind == "interleaved":
        table = _interleaved(pp, rank, num_microbatches, vpp)
    elif kind == "gpipe":
        fwd = [("F",) + _virtual(k, pp, vpp, True) for k in range(num_microbatches * vpp)]
        table = fwd + [("B",) + _virtual(k, pp, vpp, False) for k in range(num_microbatches * vpp)]
    else:
        raise ScheduleError(f"unknown pipeline schedule {kind!r}; use auto, 1f1b, interleaved or gpipe")
    if forward_only:
        table = [a for a in table if a[0] == "F"]
    return table


def schedule_table(pp: int, num_microbatches: int, vpp: int = 1, forward_only: bool = False,
                   kind: str = "auto") -> list[list[Action]]:
    """The whole schedule without running it: one list of actions per pp rank."""
    return [rank_table(pp, r, num_microbatches, vpp, forward_only, kind) for r in range(pp)]


def format_table(table: list[Action]) -> str:
    """Compact text of one rank's actions, 'F0.1' = forward of chunk 0, micro-batch 1."""
    return " ".join(f"{k}{c}.{m}" for k, c, m in table)


# --------------------------------------------------------------------------------------------
# point-to-point plan
@dataclass(frozen=True)
class P2P:
    """One message: `op` is "send" or "recv", `peer` the pp rank on the other end, `what` is
    ("act" | "grad", chunk, micro_batch) naming the tensor from this rank's point of view (the
    activation entering / leaving chunk `chunk`, or the gradient of it)."""

    op: str
    peer: int
    what: tuple
    message: tuple  # ("act" | "grad", sending virtual stage, micro_batch): equal on both ends


def _recv_for(action: Action, pp: int, vpp: int, rank: int) -> P2P | None:
    kind, c, m = action
    vs, last = c * pp + rank, pp * vpp - 1
    if kind == "F" and vs > 0:
        return P2P("recv", (rank - 1) % pp, ("act", c, m), ("act", vs - 1, m))
    if kind == "B" and vs < last:
        return P2P("recv", (rank + 1) % pp, ("grad", c, m), ("grad", vs + 1, m))
    return None


def _send_after(action: Action, pp: int, vpp: int, rank: int) -> P2P | None:
    kind, c, m = action
    vs, last = c * pp + rank, pp * vpp - 1
    if kind == "F" and vs < last:
        return P2P("send", (rank + 1) % pp, ("act", c, m), ("act", vs, m))
    if kind == "B" and vs > 0:
        return P2P("send", (rank - 1) % pp, ("grad", c, m), ("grad", vs, m))
    return None


def comm_plan(table: list[Action], pp: int, vpp: int, rank: int, paired: bool = False) -> list[list[P2P]]:
    """Batches of messages around the actions: batch i is issued before action i (batch
    len(table) after the last), as one batched isend/irecv whose ends complete together.

    Every boundary between two actions is a cut that holds the send of the action before it and
    the receive of the action after it (1F1B: send the activation with the receive of the next
    gradient, as Megatron-LM pairs them, so two neighbours never both wait in a send). With
    `paired` (the interleaved schedule) a steady-state forward and the backward after it share one
    batch after the backward (send activation, send gradient, receive the next activation and the
    next gradient), again Megatron-LM's pairing; plain boundary cuts would let neighbours block
    each other there. `simulate` checks every plan under rendezvous semantics.
    """
    n = len(table)
    later_forward = [any(a[0] == "F" for a in table[i:]) for i in range(n + 1)]
    cut = [i == 0 or i == n or not (paired and table[i - 1][0] == "F" and table[i][0] == "B" and later_forward[i])
           for i in range(n + 1)]
    batches: list[list[P2P]] = [[] for _ in range(n + 1)]
    for i, action in enumerate(table):
        send = _send_after(action, pp, vpp, rank)
        if send is not None:
            j = i + 1
            while not cut[j]:
                j += 1
            batches[j].append(send)
    for i, action in enumerate(table):  # receives after sends: the order inside a batch is free
        recv = _recv_for(action, pp, vpp, rank)
        if recv is not None:
            j = i
            while not cut[j]:
                j -= 1
            batches[j].append(recv)
    return batches


class PipelineDeadlock(RuntimeError):
    pass


def simulate(tables: list[list[Action]], vpp: int = 1, t_forward: float = 1.0, t_backward: float = 2.0,
             comm: float = 0.0, paired: bool | None = None, rendezvous: bool = True) -> dict:
    """Run the plan of every rank under rendezvous semantics (a message completes only when both
    ends have posted it, matched in order per directed pair of ranks, as NCCL does; gloo is more
    forgiving) with each action taking t_forward / vpp or t_backward / vpp.

    With rendezvous=False a send never waits (only data dependencies count): the ideal timing.
    `paired` defaults to vpp > 1 (the interleaved schedule's batching, as the runtime uses it).

    Raises PipelineDeadlock when some rank can never continue, or when the k-th message sent on a
    pair is not the k-th message its receiver expects. Returns {"makespan", "finish" per rank,
    "busy" per rank}.
    """
    pp = len(tables)
    paired = vpp > 1 if paired is None else paired
    plans = [comm_plan(t, pp, vpp, r, paired) for r, t in enumerate(tables)]
    # position of every op on its directed channel, and the batch that holds it
    channel: dict[tuple[int, int], dict[str, list]] = {}
    for r, plan in enumerate(plans):
        for b, batch in enumerate(plan):
            for op in batch:
                key = (r, op.peer) if op.op == "send" else (op.peer, r)
                channel.setdefault(key, {"send": [], "recv": []})[op.op].append((r, b, op))
    counterpart = {}
    for (src, dst), ends in channel.items():
        if len(ends["send"]) != len(ends["recv"]):
            raise PipelineDeadlock(f"rank {src} sends {len(ends['send'])} messages to rank {dst}, which "
                                   f"receives {len(ends['recv'])}")
        for (sr, sb, s), (rr, rb, rv) in zip(ends["send"], ends["recv"]):
            if s.message != rv.message:
                raise PipelineDeadlock(f"rank {src} sends {s.message} to rank {dst}, which expects {rv.message} "
                                       "at that point")
            counterpart[(sr, sb, s)] = (rr, rb)
            counterpart[(rr, rb, rv)] = (sr, sb)
    durations = [[(t_forward if k == "F" else t_backward) / vpp for k, _, _ in t] for t in tables]
    pos = [0] * pp  # next batch to complete
    posted = [[0.0] for _ in range(pp)]  # time at which the rank posted each batch it reached
    busy = [sum(d) for d in durations]
    progress = True
    while progress:
        progress = False
        for r in range(pp):
            b = pos[r]
            if b > len(tables[r]):
                continue
            when = posted[r][b]
            for op in plans[r][b]:
                if op.op == "send" and not rendezvous:
                    continue
                pr, pb = counterpart[(r, b, op)]
                if pos[pr] < pb:
                    break
                when = max(when, posted[pr][pb])
            else:
                t = when + (comm if plans[r][b] else 0.0)
                if b < len(tables[r]):
                    t += durations[r][b]
                posted[r].append(t)
                pos[r] = b + 1
                progress = True
    stuck = [r for r in range(pp) if pos[r] <= len(tables[r])]
    if stuck:
        where = ", ".join(f"rank {r} before {tables[r][pos[r]] if pos[r] < len(tables[r]) else 'the end'}"
                          for r in stuck)
        raise PipelineDeadlock(f"the schedule deadlocks: {where}")
    finish = [p[-1] for p in posted]
    return {"makespan": max(finish), "finish": finish, "busy": busy}
