"""A stand-in for Perspective's comments:analyze on 127.0.0.1 (http.server in a thread, HTTP/1.1
kept-alive connections), for tests/test_perspective_client.py and bench/bench_perspective.py.

It answers as the API does (attributeScores.ATTR.summaryScore.value for the six attributes; the
TOXICITY of a text is a fixed function of its text, so a score given to the wrong text is seen),
records when each request arrived by its own clock (after an optional per-text delay on the way
in, which makes requests arrive out of step with their sends), and plays faults from a plan: for a text, the
actions of its 1st, 2nd, ... request:
    "ok"                     the scores
    ("status", code, after)  an error status with a JSON error body (after: the Retry-After value or None)
    "drop"                   reads the request, closes the connection without an answer
    "reset"                  the same with an RST (SO_LINGER 0)
    ("hold", seconds)        answers nothing for that long, then closes (a client timeout)
    "malformed"              200 with a body that lacks the scores
    "notjson"                200 with an HTML page
    ("latency", seconds)     the scores after a delay
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ATTRIBUTES = ("TOXICITY", "SEVERE_TOXICITY", "SEXUALLY_EXPLICIT", "THREAT", "PROFANITY", "IDENTITY_ATTACK")


def toxicity(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 2 ** 32


def scores_body(text: str) -> dict:
    return {"attributeScores": {a: {"spanScores": [{"begin": 0, "end": len(text),
                                                    "score": {"value": 0.1, "type": "PROBABILITY"}}],
                                    "summaryScore": {"value": toxicity(text) if a == "TOXICITY" else 0.01,
                                                     "type": "PROBABILITY"}} for a in ATTRIBUTES},
            "languages": ["en"], "detectedLanguages": ["en"]}


def max_in_window(times: list[float], window: float = 1.0) -> int:
    """The most arrivals in any half-open window [t, t + window)."""
    times, best, lo = sorted(times), 0, 0
    for hi, t in enumerate(times):
        while times[lo] <= t - window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


class FakePerspective:
    def __init__(self, plan: dict | None = None, latency=None, inbound=None, bind=True):
        self.plan = plan or {}          # text -> [action of try 1, try 2, ...]; then "ok"
        self.latency = latency           # None, or a function(text) -> seconds before each "ok"
        self.inbound = inbound           # None, or a function(text) -> seconds the request takes to arrive
        self.lock = threading.Lock()
        self.arrivals: list[tuple[float, str, str]] = []  # (time, text, action)
        self.tries: Counter = Counter()  # requests per text
        self.answered: Counter = Counter()  # scores given per text
        self.keys: set[str] = set()
        self.answered_event = threading.Event()
        self.answered_target: int | None = None
        self.release = threading.Event()  # ends every ("hold", s) early (teardown)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(), bind_and_activate=False)
        self.httpd.daemon_threads = True
        self.httpd.request_queue_size = 256  # many workers connecting at once: no SYN dropped
        self.httpd.server_bind()
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1alpha1/comments:analyze"
        self.thread = None
        if bind:
            self.start()

    def start(self) -> None:
        """Listen (until then a connection is refused) and serve in a thread."""
        self.httpd.server_activate()
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.release.set()
        if self.thread is not None:
            self.httpd.shutdown()
        self.httpd.server_close()

    def answer_times(self, text: str | None = None) -> list[float]:
        return [t for t, x, a in self.arrivals if text is None or x == text]

    def _action(self, text: str, n: int):
        steps = self.plan.get(text, ())
        return steps[n] if n < len(steps) else "ok"

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 10

            def do_POST(self):  # noqa: N802 - the http.server name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = body["comment"]["text"]
                if fake.inbound:  # the way in takes this long: the server counts the request after it
                    fake.release.wait(fake.inbound(text))
                arrived = time.monotonic()
                key = self.path.partition("?key=")[2]
                with fake.lock:
                    action = fake._action(text, fake.tries[text])
                    fake.tries[text] += 1
                    fake.arrivals.append((arrived, text, action if isinstance(action, str) else action[0]))
                    fake.keys.add(key)
                if action == "ok" or (isinstance(action, tuple) and action[0] == "latency"):
                    delay = action[1] if isinstance(action, tuple) else (fake.latency(text) if fake.latency else 0)
                    if delay:
                        fake.release.wait(delay)
                    with fake.lock:  # counted before it is sent: a client that has it finds it counted
                        fake.answered[text] += 1
                        if fake.answered_target and sum(fake.answered.values()) >= fake.answered_target:
                            fake.answered_event.set()
                    self._send(200, scores_body(text))
                elif action == "notjson":
                    self._send(200, b"<html>Service page</html>")
                elif action == "malformed":
                    self._send(200, {"attributeScores": {"TOXICITY": {"spanScores": []}}})
                elif action in ("drop", "reset"):
                    if action == "reset":
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                elif action[0] == "hold":
                    fake.release.wait(action[1])
                    self.close_connection = True
                else:  # ("status", code, retry_after)
                    _, code, after = action
                    headers = {"Retry-After": str(after)} if after is not None else {}
                    self._send(code, {"error": {"code": code, "message": "injected", "status": "UNAVAILABLE"}}, headers)

            def _send(self, status, obj, headers=None):
                data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    self.close_connection = True

            def log_message(self, *args):
                pass

        return Handler
