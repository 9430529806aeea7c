"""A Perspective API client (`commentanalyzer` v1alpha1 `comments:analyze`), as Megatron's
perspective_api.py and perspective_api_annotate.py call it.

Each text is one POST to URL?key=KEY with
    {"comment": {"text": TEXT}, "languages": ["en"],
     "requestedAttributes": {"TOXICITY": {}, "SEVERE_TOXICITY": {}, "SEXUALLY_EXPLICIT": {},
                             "THREAT": {}, "PROFANITY": {}, "IDENTITY_ATTACK": {}}}
and the answer's attributeScores.ATTR.summaryScore.value is each attribute's score. Requests are
spaced by 1/qps seconds (the API's default quota is 1 query per second); a 429 (quota) or a 5xx is
retried after an exponentially growing wait (backoff * 2^attempt seconds, at most `retries` times);
any other status, or an answer without the scores, is a PerspectiveError naming what came back.
`sleep` and `clock` are injectable, so tests run against a local server without waiting.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

URL = "https://commentanalyzer.googleapis.com/v1alpha1/comments:analyze"
ATTRIBUTES = ("TOXICITY", "SEVERE_TOXICITY", "SEXUALLY_EXPLICIT", "THREAT", "PROFANITY", "IDENTITY_ATTACK")
RETRY_STATUSES = (429, 500, 502, 503, 504)


class PerspectiveError(ValueError):
    pass


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


class PerspectiveClient:
    """The scorer interface over the API: score(texts) -> TOXICITY; analyze(text) -> all six."""

    def __init__(self, api_key: str, url: str = URL, qps: float = 1.0, retries: int = 5, backoff: float = 1.0,
                 timeout: float = 30.0, attributes=ATTRIBUTES, sleep=time.sleep, clock=time.monotonic):
        if qps <= 0:
            raise ValueError(f"--qps must be > 0, got {qps}")
        self.api_key, self.url, self.interval = api_key, url, 1.0 / qps
        self.retries, self.backoff, self.timeout = retries, backoff, timeout
        self.attributes, self.sleep, self.clock = tuple(attributes), sleep, clock
        self.key = "perspective:" + ",".join(self.attributes)
        self.last: float | None = None
        self.requests = 0

    def _wait_turn(self) -> None:
        now = self.clock()
        if self.last is not None and now - self.last < self.interval:
            self.sleep(self.interval - (now - self.last))
        self.last = self.clock()

    def analyze(self, text: str) -> dict[str, float]:
        body = json.dumps(request_body(text, self.attributes)).encode()
        for attempt in range(self.retries + 1):
            self._wait_turn()
            req = urllib.request.Request(f"{self.url}?key={self.api_key}", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
            self.requests += 1
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    raw = resp.read()
            except urllib.error.HTTPError as e:
                detail = e.read()[:200].decode(errors="replace")
                if e.code in RETRY_STATUSES and attempt < self.retries:
                    self.sleep(self.backoff * 2 ** attempt)
                    continue
                raise PerspectiveError(f"Perspective API answered HTTP {e.code} ({detail.strip() or e.reason})"
                                       + (f" after {attempt + 1} tries" if e.code in RETRY_STATUSES else "")) from None
            except urllib.error.URLError as e:
                raise PerspectiveError(f"Perspective API at {self.url}: {e.reason}") from None
            try:
                reply = json.loads(raw)
            except ValueError:
                raise PerspectiveError(f"Perspective reply is not JSON: {raw[:200]!r}") from None
            return parse_reply(reply, self.attributes)
        raise AssertionError("unreachable")

    def score(self, texts: list[str]) -> list[float]:
        return [self.analyze(t)["toxicity"] for t in texts]
