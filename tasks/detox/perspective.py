"""A Perspective API client (`commentanalyzer` v1alpha1 `comments:analyze`), as Megatron's
perspective_api.py and perspective_api_annotate.py call it, at benchmark scale.

Each text is one POST to URL?key=KEY with
    {"comment": {"text": TEXT}, "languages": ["en"],
     "requestedAttributes": {"TOXICITY": {}, "SEVERE_TOXICITY": {}, "SEXUALLY_EXPLICIT": {},
                             "THREAT": {}, "PROFANITY": {}, "IDENTITY_ATTACK": {}}}
and the answer's attributeScores.ATTR.summaryScore.value is each attribute's score.

The paper's 25 generations x 99,442 prompts are 2.5 million requests: one at a time they take weeks.
So `score_iter` keeps `concurrency` requests in flight from worker threads under one `Quota`
(quota.py: at most qps requests in any second as the server counts them, sends spaced by 1/qps).
A try that fails on the way (connection refused, reset or dropped, a timeout) or is answered 429 or
5xx is tried again after an exponentially growing wait with jitter, or after the server's
Retry-After (seconds or an HTTP date; a 429's Retry-After holds every worker back), at most
`retries` times. Any other status, or an answer without the scores, is a PerspectiveError naming
what came back; the texts already scored still reach the caller (and the cache) first. The key
stays out of messages and logs (transport.py). `sleep`, `clock` and `rng` are injectable for tests.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import math
import random
import ssl
import threading
import time
import urllib.parse
from collections import Counter

from megazoo.core.verbosity import shows_progress
from megazoo.tasks.detox.quota import Quota, Stopped, backoff_wait, retry_after
from megazoo.tasks.detox.transport import NETWORK_ERRORS, Transport

URL = "https://commentanalyzer.googleapis.com/v1alpha1/comments:analyze"
ATTRIBUTES = ("TOXICITY", "SEVERE_TOXICITY", "SEXUALLY_EXPLICIT", "THREAT", "PROFANITY", "IDENTITY_ATTACK")


class PerspectiveError(ValueError):
    pass


@dataclasses.dataclass
class PerspectiveConfig:
    """How the client uses its quota. qps is the project's quota (Perspective's default is 1 query
    per second; raised quotas are granted on request); concurrency, the requests in flight (about
    qps x latency is enough); retries, the extra tries per text; backoff * 2^try seconds (at most
    max_backoff, spread by +-jitter of itself) between tries; a Retry-After above max_wait stops the
    run (a daily quota spent: rerun later, the cache resumes it). strict_quota counts a request
    until one second after its reply, so the server never sees the quota exceeded in any second;
    False counts it from its send only (quota.py says when that is enough)."""

    qps: float = 1.0
    concurrency: int = 16
    retries: int = 8
    backoff: float = 1.0
    max_backoff: float = 60.0
    jitter: float = 0.5
    max_wait: float = 600.0
    timeout: float = 30.0
    progress: bool = True
    strict_quota: bool = True

    def check(self) -> None:
        def bad(name, value, rule):
            raise ValueError(f"--{name.replace('_', '-')} must be {rule}, got {value}")

        for name in ("qps", "backoff", "max_backoff", "timeout", "max_wait"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                bad(name, value, "> 0" + (" (the quota in queries per second)" if name == "qps" else ""))
        for name, low in (("concurrency", 1), ("retries", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                bad(name, value, f"an integer >= {low}")
        if not (isinstance(self.jitter, (int, float)) and 0 <= self.jitter < 1):
            bad("jitter", self.jitter, "in [0, 1)")


def request_body(text: str, attributes=ATTRIBUTES) -> dict:
    return {"comment": {"text": text}, "languages": ["en"], "requestedAttributes": {a: {} for a in attributes}}


def parse_reply(reply: dict, attributes=ATTRIBUTES) -> dict[str, float]:
    """{attribute (lower case): summaryScore.value} of an analyze answer."""
    scores = reply.get("attributeScores") if isinstance(reply, dict) else None
    out = {}
    for a in attributes:
        try:
            value = scores[a]["summaryScore"]["value"]
        except (KeyError, TypeError):
            raise PerspectiveError(f"Perspective reply has no attributeScores.{a}.summaryScore.value: "
                                   f"{json.dumps(reply)[:200]}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PerspectiveError(f"Perspective reply: attributeScores.{a}.summaryScore.value is {value!r}, not a "
                                   f"number")
        out[a.lower()] = float(value)
    return out


def retryable(status: int) -> bool:
    return status == 429 or 500 <= status < 600


class PerspectiveClient:
    """The scorer interface over the API: score(texts) -> TOXICITY; score_iter(texts) -> (index,
    TOXICITY) as answers come; analyze(text) -> all six. Options are PerspectiveConfig's fields,
    given as `config` or one by one (qps=..., retries=...)."""

    def __init__(self, api_key: str, url: str = URL, config: PerspectiveConfig | None = None, *,
                 attributes=ATTRIBUTES, sleep=None, clock=time.monotonic, rng=None, **options):
        try:
            self.config = dataclasses.replace(config or PerspectiveConfig(), **options)
        except TypeError as e:
            raise ValueError(f"PerspectiveClient: {e}") from None
        self.config.check()
        self.api_key, self.url, self.attributes = api_key, url, tuple(attributes)
        self.key = "perspective:" + ",".join(self.attributes)
        self.stopping = threading.Event()
        self.sleep = sleep or self._interruptible_sleep
        self.clock, self.rng = clock, rng or random.Random()
        self.quota = Quota(self.config.qps, self.sleep, clock, strict=self.config.strict_quota)
        self.transport = Transport(url, self.config.timeout)
        self.query = urllib.parse.urlencode({"key": api_key})
        self.stats: Counter = Counter()  # requests, retries, network errors, HTTP statuses
        self.lock = threading.Lock()

    @property
    def requests(self) -> int:
        return self.stats["requests"]

    def __repr__(self) -> str:  # never the key
        return f"PerspectiveClient(url={self.url!r}, {self.config})"

    def _interruptible_sleep(self, seconds: float) -> None:
        if self.stopping.wait(seconds):
            raise Stopped()

    def _count(self, *names: str) -> None:
        with self.lock:
            self.stats.update(names)

    def _wait_before_retry(self, attempt: int, after: float | None) -> None:
        c = self.config
        if after is None:
            self.sleep(backoff_wait(attempt, c.backoff, c.max_backoff, c.jitter, self.rng))
            return
        if after > c.max_wait:
            raise PerspectiveError(f"Perspective API asks to wait {after:.0f} s before the next request (Retry-After), "
                                   f"more than max_wait {c.max_wait:g} s: the quota is spent for now; rerun later "
                                   f"(the scores so far are cached and not asked again)")
        self.quota.pause(after)  # every worker waits: the quota is shared
        self.sleep(after * (1.0 + c.jitter * self.rng.random()))  # never before the server said

    def analyze(self, text: str) -> dict[str, float]:
        """All requested attributes of one text, retrying as the module docstring says."""
        body = json.dumps(request_body(text, self.attributes)).encode()
        tries = self.config.retries + 1
        for attempt in range(tries):
            if self.stopping.is_set():
                raise Stopped()
            ticket = self.quota.acquire()
            self._count("requests")
            failure = None
            try:
                status, headers, raw = self.transport.post(self.query, body)
            except ssl.SSLCertVerificationError as e:
                raise PerspectiveError(f"Perspective API at {self.url}: {e.verify_message or e}") from None
            except NETWORK_ERRORS as e:
                failure = network_reason(e)
            finally:
                self.quota.release(ticket)  # before any wait: a waiting try holds no place in the quota
            if failure is not None:
                self._count("network errors")
                if attempt + 1 == tries:
                    raise PerspectiveError(f"Perspective API at {self.url}: {failure} after {tries} tries")
                self._count("retries")
                self._wait_before_retry(attempt, None)
                continue
            if status != 200:
                self._count(f"HTTP {status}")
                detail = raw[:200].decode(errors="replace").strip()
                if retryable(status) and attempt + 1 < tries:
                    self._count("retries")
                    self._wait_before_retry(attempt, retry_after(headers.get("retry-after")))
                    continue
                raise PerspectiveError(f"Perspective API answered HTTP {status} ({detail or 'no detail'})"
                                       + (f" after {tries} tries" if retryable(status) else ""))
            try:
                reply = json.loads(raw)
            except ValueError:
                raise PerspectiveError(f"Perspective reply is not JSON: {raw[:200]!r}") from None
            return parse_reply(reply, self.attributes)
        raise AssertionError("unreachable")

    def score_iter(self, texts: list[str]):
        """(index, TOXICITY) for each text, in the order answers come, from `concurrency` workers.
        On an error the texts already answered are yielded first, then it is raised; closing the
        generator early (an exception in the caller, Ctrl-C) stops the workers."""
        from tqdm.auto import tqdm

        c = self.config
        pending = iter(enumerate(texts))
        error: BaseException | None = None
        bar = tqdm(total=len(texts), desc="perspective", unit="text", disable=not shows_progress(c.progress), smoothing=0.05)
        pool = cf.ThreadPoolExecutor(max_workers=c.concurrency, thread_name_prefix="perspective")
        try:
            running: dict[cf.Future, int] = {}

            def submit_more():
                while error is None and len(running) < 2 * c.concurrency:
                    item = next(pending, None)
                    if item is None:
                        return
                    running[pool.submit(self.analyze, item[1])] = item[0]

            submit_more()
            while running:
                done, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    i = running.pop(future)
                    exc = future.exception()
                    if exc is None:
                        bar.update(1)
                        yield i, future.result()["toxicity"]
                    elif error is None and not isinstance(exc, Stopped):
                        error = exc
                        self._stop_workers()
                if self.stats["retries"]:
                    bar.set_postfix_str(self._summary(), refresh=False)
                submit_more()
            if error is not None:
                raise error
        finally:
            self._stop_workers()
            pool.shutdown(wait=True, cancel_futures=True)
            self.transport.close()
            bar.close()
            self.stopping.clear()  # the workers are gone: analyze() may be called again
            self.quota.resume()

    def _stop_workers(self) -> None:
        self.stopping.set()
        self.quota.stop()

    def _summary(self) -> str:
        return ", ".join(f"{n} {k}" for k, n in sorted(self.stats.items()) if k != "requests")

    def score(self, texts: list[str]) -> list[float]:
        out: list[float | None] = [None] * len(texts)
        for i, toxicity in self.score_iter(texts):
            out[i] = toxicity
        return out


def network_reason(e: BaseException) -> str:
    """A short name for a failed try: 'connection refused', 'timed out', ..."""
    if isinstance(e, ConnectionRefusedError):
        return "connection refused"
    if isinstance(e, TimeoutError):
        return "timed out"
    if isinstance(e, ConnectionResetError):
        return "connection reset or dropped"
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
