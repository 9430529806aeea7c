"""The Perspective client against a local HTTP server in a thread that answers as the API does:
the request it sends (path, key, body with the six attributes), summaryScore.value parsed, a 429
retried after the injected backoff, a malformed reply and a 400 reported clearly, the rate limit
spacing requests by 1/qps on an injected clock. No real waiting: sleep and clock are fakes."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from megazoo.tasks.detox.perspective import ATTRIBUTES, PerspectiveClient, PerspectiveError
from megazoo.tasks.detox.scorers import make_scorer


class Api:
    """What the server answers next (a queue of (status, body)), and what it was sent."""

    def __init__(self):
        self.answers: list[tuple[int, object]] = []
        self.seen: list[dict] = []


def reply(toxicity: float) -> dict:
    return {"attributeScores": {a: {"spanScores": [{"begin": 0, "end": 5, "score": {"value": 0.1, "type": "PROBABILITY"}}],
                                    "summaryScore": {"value": toxicity if a == "TOXICITY" else 0.01,
                                                     "type": "PROBABILITY"}} for a in ATTRIBUTES},
            "languages": ["en"], "detectedLanguages": ["en"]}


@pytest.fixture
def server():
    api = Api()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            api.seen.append({"path": self.path, "type": self.headers["Content-Type"], "body": json.loads(body)})
            status, answer = api.answers.pop(0) if api.answers else (200, reply(0.5))
            data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1alpha1/comments:analyze"
    yield api, url
    httpd.shutdown()
    httpd.server_close()


class FakeTime:
    def __init__(self):
        self.now, self.sleeps = 100.0, []

    def sleep(self, s):
        self.sleeps.append(round(s, 6))
        self.now += s

    def clock(self):
        return self.now


def client(url, clock: FakeTime, **kw) -> PerspectiveClient:
    return PerspectiveClient("KEY123", url=url, sleep=clock.sleep, clock=clock.clock, **kw)


def test_sends_the_api_request_and_parses_summary_scores(server):
    api, url = server
    api.answers = [(200, reply(0.83)), (200, reply(0.02))]
    t = FakeTime()
    c = client(url, t)
    assert c.score(["you are awful", "hello"]) == [0.83, 0.02]
    first = api.seen[0]
    assert first["path"] == "/v1alpha1/comments:analyze?key=KEY123" and first["type"] == "application/json"
    assert first["body"] == {"comment": {"text": "you are awful"}, "languages": ["en"],
                             "requestedAttributes": {a: {} for a in ("TOXICITY", "SEVERE_TOXICITY", "SEXUALLY_EXPLICIT",
                                                                     "THREAT", "PROFANITY", "IDENTITY_ATTACK")}}
    assert c.analyze("x") == {"toxicity": 0.5, "severe_toxicity": 0.01, "sexually_explicit": 0.01, "threat": 0.01,
                              "profanity": 0.01, "identity_attack": 0.01}
    assert t.sleeps == [1.0, 1.0]  # 1 query per second: the 2nd and 3rd requests waited for their turn


def test_429_is_retried_after_the_backoff_then_succeeds(server):
    api, url = server
    quota = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}
    api.answers = [(429, quota), (429, quota), (200, reply(0.4))]
    t = FakeTime()
    c = client(url, t, qps=1000.0, backoff=0.5, jitter=0.0)
    assert c.score(["text"]) == [0.4]
    assert c.requests == 3 and len(api.seen) == 3
    assert [s for s in t.sleeps if s >= 0.5] == [0.5, 1.0]  # backoff * 2^attempt


def test_retries_run_out_with_a_clear_error(server):
    api, url = server
    api.answers = [(503, {"error": "busy"})] * 3
    with pytest.raises(PerspectiveError, match=r"HTTP 503 .* after 3 tries"):
        client(url, FakeTime(), retries=2).score(["text"])


def test_malformed_reply_and_client_errors_are_clear(server):
    api, url = server
    api.answers = [(200, {"attributeScores": {"TOXICITY": {"spanScores": []}}})]
    with pytest.raises(PerspectiveError, match=r"reply has no attributeScores\.TOXICITY\.summaryScore\.value"):
        client(url, FakeTime()).score(["text"])
    api.answers = [(200, b"<html>not json</html>")]
    with pytest.raises(PerspectiveError, match="reply is not JSON"):
        client(url, FakeTime()).score(["text"])
    api.answers = [(400, {"error": {"message": "Attribute TOXICITY does not support request languages: xx"}})]
    with pytest.raises(PerspectiveError, match="HTTP 400 .*does not support request languages"):
        client(url, FakeTime()).score(["text"])
    assert len(api.seen) == 3  # a 400 is not retried


def test_the_scorer_name_reads_key_and_address_from_the_environment(server, monkeypatch):
    api, url = server
    monkeypatch.delenv("PERSPECTIVE_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"needs an API key in \$PERSPECTIVE_API_KEY"):
        make_scorer("perspective")
    monkeypatch.setenv("PERSPECTIVE_API_KEY", "ENVKEY")
    monkeypatch.setenv("PERSPECTIVE_API_URL", url)
    api.answers = [(200, reply(0.7))]
    assert make_scorer("perspective", qps=1e6).score(["hi"]) == [0.7]
    assert api.seen[0]["path"].endswith("?key=ENVKEY")
