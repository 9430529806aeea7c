"""Request timing for a rate-limited API: a quota that the server side never sees exceeded, and the
waits between tries (exponential backoff with jitter; the server's Retry-After, in seconds or as an
HTTP date).

Why the quota counts replies, not only sends: a client that only spaces its sends by 1/qps can still
exceed the quota as the server measures it, because requests take different times to arrive (a
request sent at t = 0 that arrives late and one sent at t = 1 that arrives early share one server
second). The server receives a request somewhere between the moment it was granted and the moment
its answer (or error) came back. So `Quota` counts a request from its grant until one window after
its end, and grants a new one only while fewer than `cap` are counted: any window of the server's
clock then holds at most `cap` arrivals, whatever the delays (the request last granted in such a
window found all the others still counted). The cost is throughput of about qps / (1 + latency in
seconds); sends are also spaced by 1/qps so they do not come in bursts.
"""

from __future__ import annotations

import email.utils
import math
import threading
import time


class Stopped(Exception):
    """The run is stopping (an error elsewhere, or the caller went away): no more grants."""


class Quota:
    """At most `cap` requests in any window of `window` seconds, as the server counts them.

    qps >= 1: window 1 s, cap floor(qps); qps < 1: window 1/qps s, cap 1. `acquire()` blocks until a
    request may go and returns its ticket; `release(ticket)` when its answer or error is back.
    `pause(seconds)` holds every grant back (the server asked for it with Retry-After). `sleep` and
    `clock` are injectable so tests can run on a fake clock; waits for a reply use a condition."""

    def __init__(self, qps: float, sleep=time.sleep, clock=time.monotonic, strict: bool = True):
        if not (isinstance(qps, (int, float)) and math.isfinite(qps) and qps > 0):
            raise ValueError(f"--qps must be > 0 (the quota in queries per second), got {qps}")
        self.window = 1.0 if qps >= 1 else 1.0 / qps
        self.cap = max(1, math.floor(qps * self.window + 1e-9))
        self.interval = 1.0 / qps
        self.sleep, self.clock, self.strict = sleep, clock, strict
        self.cond = threading.Condition()
        self.counted: dict[int, float | None] = {}  # ticket -> end time (None: still in flight)
        self.next_ticket = 0
        self.last_grant: float | None = None
        self.paused_until = -math.inf
        self.stopped = False

    def _wait_needed(self, now: float) -> float | None:
        """Seconds to wait before a grant (0: grant now); None: wait for a reply."""
        for ticket, end in list(self.counted.items()):
            if end is not None and end <= now - self.window:
                del self.counted[ticket]
        waits = [self.paused_until - now]
        if self.last_grant is not None:
            waits.append(self.last_grant + self.interval - now)
        if len(self.counted) >= self.cap:
            ends = [end for end in self.counted.values() if end is not None]
            if not ends:
                return None
            waits.append(min(ends) + self.window - now)
        return max(0.0, *waits)

    def acquire(self) -> int:
        with self.cond:
            while True:
                if self.stopped:
                    raise Stopped()
                now = self.clock()
                wait = self._wait_needed(now)
                if wait is None:
                    self.cond.wait()
                    continue
                if wait <= 0:
                    ticket, self.next_ticket = self.next_ticket, self.next_ticket + 1
                    self.counted[ticket] = None if self.strict else now  # not strict: counted from its grant
                    self.last_grant = now
                    return ticket
                self.cond.release()
                try:
                    self.sleep(wait)
                finally:
                    self.cond.acquire()

    def release(self, ticket: int) -> None:
        with self.cond:
            if ticket in self.counted and self.strict:
                self.counted[ticket] = self.clock()
            self.cond.notify_all()

    def pause(self, seconds: float) -> None:
        with self.cond:
            self.paused_until = max(self.paused_until, self.clock() + seconds)

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify_all()

    def resume(self) -> None:
        with self.cond:
            self.stopped = False


def backoff_wait(attempt: int, backoff: float, max_backoff: float, jitter: float, rng) -> float:
    """backoff * 2^attempt seconds (at most max_backoff), spread by +-jitter of itself so workers that
    failed together do not come back together; jitter 0 gives the plain exponential sequence."""
    base = min(max_backoff, backoff * 2 ** attempt)
    return base * (1.0 + jitter * (2.0 * rng.random() - 1.0))


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a Retry-After header asks for: delay-seconds ("120"; a fraction is accepted) or an
    HTTP date ("Wed, 21 Oct 2015 07:28:00 GMT", counted from `now`, a Unix time); None when absent or
    unreadable (then the backoff applies)."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
        return max(0.0, seconds) if math.isfinite(seconds) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
