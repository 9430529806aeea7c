"""The Perspective client at benchmark scale against a fake comments:analyze on 127.0.0.1
(tests/perspective_fake.py): 1,000 texts with injected 429s (with and without Retry-After), 5xx,
dropped and reset connections, every text scored once with its own score; the quota never exceeded
as the server's own arrival times count it; Retry-After honoured (seconds, an HTTP date, too long a
wait stops the run); timeouts and a refused connection retried; a run stopped by an error or killed
(SIGKILL) resumes from the cache and asks only for the rest; the key in no message or log; bad
options and a malformed reply each one clear line."""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
import time

import pytest

from megazoo.tasks.detox.cache import ScoreCache
from megazoo.tasks.detox.perspective import PerspectiveClient, PerspectiveError
from megazoo.tasks.detox.quota import Quota, retry_after
from megazoo.tasks.detox.scorers import make_scorer, score_texts
from tests.perspective_fake import FakePerspective, max_in_window, toxicity

KEY = "SECRET-KEY-42"


@pytest.fixture
def fakes():
    made = []

    def make(plan=None, **kw):
        made.append(FakePerspective(plan, **kw))
        return made[-1]

    yield make
    for fake in made:
        fake.stop()


def texts(n, tag="t"):
    return [f"{tag} {i:05d}: some generated continuation" for i in range(n)]


def client(url, **options):
    options = {"backoff": 0.05, "max_backoff": 0.4, "progress": False, **options}
    return PerspectiveClient(KEY, url=url, **options)


def test_thousand_texts_through_429s_5xx_and_dropped_connections(fakes, tmp_path, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    items = texts(1000)
    plan = {}
    for i in range(0, 1000, 50):  # 20 texts each: a fault kind, then the scores
        plan[items[i]] = [("status", 429, "0.1")]
        plan[items[i + 1]] = [("status", 429, None), ("status", 429, None)]
        plan[items[i + 2]] = [("status", 503, None), ("status", 500, "0")]
        plan[items[i + 3]] = ["drop"]
        plan[items[i + 4]] = ["reset", ("status", 502, None)]
    fake = fakes(plan)
    c = client(fake.url, qps=500, concurrency=32, progress=True)
    cache = tmp_path / "scores.cache.jsonl"
    t0 = time.monotonic()
    got = score_texts(c, items + items[:10], ScoreCache(cache))  # repeats are asked once
    seconds = time.monotonic() - t0
    assert got == [toxicity(t) for t in items + items[:10]]  # every text its own score, none lost
    assert set(fake.answered) == set(items) and set(fake.answered.values()) == {1}  # each scored once
    assert max_in_window(fake.answer_times()) <= 500
    assert len(fake.arrivals) == 1000 + 20 * 8  # no request beyond the faults
    assert c.stats["HTTP 429"] == 60 and c.stats["HTTP 503"] == 20 and c.stats["network errors"] == 40
    for i in range(0, 1000, 50):  # Retry-After 0.1: the retry came at least 0.1 s later
        first, second = fake.answer_times(items[i])
        assert second - first >= 0.1
    assert len(ScoreCache(cache).scores) == 1000
    err = capsys.readouterr().err
    assert "perspective: 100%" in err and "1000/1000" in err
    assert KEY not in err and KEY not in caplog.text and KEY not in repr(c)
    assert seconds < 30


def test_a_50_qps_quota_is_never_exceeded_at_the_server(fakes):
    # delays on the way in that vary per text (0-40 ms) make arrivals uneven: counting sends alone
    # (strict_quota=False) lets a slow first request and a fast 51st share one of the server's seconds
    fake = fakes(inbound=lambda text: toxicity(text) * 0.04, latency=lambda text: toxicity(text[::-1]) * 0.04)
    items = texts(130)
    c = client(fake.url, qps=50, concurrency=16)
    assert c.score(items) == [toxicity(t) for t in items]
    times = fake.answer_times()
    assert max_in_window(times) <= 50
    assert max_in_window(times) >= 40  # and the quota is used, not idled away
    assert (len(times) - 1) / (max(times) - min(times)) > 35


class FakeClock:
    def __init__(self):
        self.now, self.sleeps = 0.0, []

    def sleep(self, s):
        self.sleeps.append(round(s, 6))
        self.now += s


@pytest.mark.parametrize("strict, third_at", [(True, 1.7), (False, 1.0)])
def test_quota_counts_a_request_until_one_second_after_its_reply(strict, third_at):
    t = FakeClock()
    q = Quota(2, sleep=t.sleep, clock=lambda: t.now, strict=strict)
    a = q.acquire()
    b = q.acquire()  # sends spaced by 1/qps
    assert t.now == 0.5
    t.now = 0.7
    q.release(a)
    q.release(b)
    q.acquire()  # strict: a counts until 0.7 + 1; not strict: until its send + 1
    assert t.now == pytest.approx(third_at)


def test_retry_after_in_seconds_and_as_an_http_date():
    assert retry_after("120") == 120.0 and retry_after("0.5") == 0.5 and retry_after(None) is None
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 - 30) == 30.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480 + 99) == 0.0  # already past
    assert retry_after("soon") is None and retry_after("-3") == 0.0


def test_a_429_retry_after_holds_every_worker_back(fakes):
    items = texts(20)
    fake = fakes({items[0]: [("status", 429, "1")]})
    c = client(fake.url, qps=50, concurrency=4)
    assert c.score(items) == [toxicity(t) for t in items]
    first_429, retry = fake.answer_times(items[0])
    assert retry - first_429 >= 1.0
    # the other workers wait with it (the quota is the project's, not the text's): past the few
    # granted before the 429 came back, nothing arrives until the second is over (without the hold,
    # all 20 would be done 0.4 s after the first)
    later = [t for t in fake.answer_times() if t > first_429]
    assert not [t for t in later if first_429 + 0.5 < t < first_429 + 1.0]
    assert len([t for t in later if t >= first_429 + 1.0]) >= 10


def test_too_long_a_retry_after_stops_with_a_clear_message(fakes):
    items = texts(2)
    fake = fakes({items[0]: [("status", 429, "Wed, 21 Oct 2065 07:28:00 GMT")]})
    with pytest.raises(PerspectiveError, match=r"asks to wait \d+ s .*more than max_wait 600 s.*rerun later"):
        client(fake.url, concurrency=1).score(items)


def test_a_timeout_is_retried(fakes):
    items = texts(3)
    fake = fakes({items[1]: [("hold", 5.0)]})
    c = client(fake.url, qps=100, timeout=1.0)
    assert c.score(items) == [toxicity(t) for t in items]
    assert c.stats["network errors"] == 1 and fake.tries[items[1]] == 2


def test_a_refused_connection_is_retried_until_the_server_listens(fakes):
    fake = fakes(bind=False)  # bound, not listening: connections are refused
    refused = []

    def sleep(seconds):  # the client's first backoff: now the server comes up
        refused.append(seconds)
        if fake.thread is None:
            fake.start()
        time.sleep(seconds)

    c = PerspectiveClient(KEY, url=fake.url, qps=100, backoff=0.01, progress=False, sleep=sleep)
    assert c.score(["hello"]) == [toxicity("hello")]
    assert c.stats["network errors"] == 1 and refused


def test_retries_run_out_on_a_refused_connection_with_one_line(fakes):
    fake = fakes(bind=False)
    with pytest.raises(PerspectiveError) as e:
        client(fake.url, qps=100, retries=2, backoff=0.01).score(["hello"])
    assert str(e.value) == f"Perspective API at {fake.url}: connection refused after 3 tries"
    assert KEY not in str(e.value)


def test_a_run_stopped_by_a_malformed_reply_resumes_from_the_cache(fakes, tmp_path):
    items = texts(300)
    cache = tmp_path / "c.jsonl"
    bad = fakes({items[150]: ["malformed"]})
    with pytest.raises(PerspectiveError, match=r"^Perspective reply has no attributeScores\.TOXICITY\.summaryScore"):
        score_texts(client(bad.url, qps=500, concurrency=8), items, ScoreCache(cache))
    kept = {t for t in items if ScoreCache(cache).get(client(bad.url).key, t) is not None}
    assert kept == set(bad.answered) and 140 <= len(kept) < 300  # what came back before the error is kept
    good = fakes()
    assert score_texts(client(good.url, qps=500, concurrency=8), items, ScoreCache(cache)) == \
        [toxicity(t) for t in items]
    assert set(good.tries) == set(items) - kept and set(good.tries.values()) == {1}  # only the rest


CHILD = """
import json, sys
from megazoo.tasks.detox.cache import ScoreCache
from megazoo.tasks.detox.perspective import PerspectiveClient
from megazoo.tasks.detox.scorers import score_texts
url, cache, items = json.load(open(sys.argv[1]))
score_texts(PerspectiveClient("KEY", url=url, qps=100, concurrency=8, progress=False), items, ScoreCache(cache))
"""


def test_a_killed_run_resumes_from_the_cache_and_asks_only_the_rest(fakes, tmp_path):
    items = texts(400)
    fake = fakes()
    fake.answered_target = 100
    cache = tmp_path / "c.jsonl"
    (tmp_path / "args.json").write_text(json.dumps([fake.url, str(cache), items]))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "args.json")], cwd=tmp_path)
    try:
        assert fake.answered_event.wait(60), "the child scored nothing"
        os.kill(child.pid, signal.SIGKILL)  # as a machine or a user would stop it: no cleanup
    finally:
        child.wait(30)
    asked_before = set(fake.tries)
    scorer_key = PerspectiveClient("K", url=fake.url).key
    kept = {t for t in items if ScoreCache(cache).get(scorer_key, t) is not None}
    assert 100 - 16 <= len(kept) < 400 and kept <= asked_before  # all but the answers still in flight
    again = fakes()
    assert score_texts(client(again.url, qps=500, concurrency=8), items, ScoreCache(cache)) == \
        [toxicity(t) for t in items]
    assert set(again.tries) == set(items) - kept  # a cached text is never asked again


@pytest.mark.parametrize("option, value, message", [
    ("qps", 0, "--qps must be > 0 (the quota in queries per second), got 0"),
    ("qps", -5.0, "--qps must be > 0 (the quota in queries per second), got -5.0"),
    ("qps", math.nan, "--qps must be > 0 (the quota in queries per second), got nan"),
    ("concurrency", 0, "--concurrency must be an integer >= 1, got 0"),
    ("retries", -1, "--retries must be an integer >= 0, got -1"),
    ("jitter", 1.5, "--jitter must be in [0, 1), got 1.5"),
])
def test_bad_options_are_one_line(option, value, message):
    with pytest.raises(ValueError) as e:
        PerspectiveClient(KEY, url="http://127.0.0.1:9/x", **{option: value})
    assert str(e.value) == message


def test_a_reply_that_is_not_json_names_it(fakes):
    fake = fakes({"x": ["notjson"]})
    with pytest.raises(PerspectiveError) as e:
        client(fake.url).score(["x"])
    assert str(e.value) == "Perspective reply is not JSON: b'<html>Service page</html>'"


def test_the_score_stage_uses_the_client_options_and_its_cache(fakes, tmp_path, monkeypatch, capsys):
    from tests.cli_helpers import run_cli

    items = texts(40)
    fake = fakes({items[3]: [("status", 503, None)] * 2})
    monkeypatch.setenv("PERSPECTIVE_API_KEY", KEY)
    monkeypatch.setenv("PERSPECTIVE_API_URL", fake.url)
    prompts, gens = tmp_path / "prompts.jsonl", tmp_path / "gens.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": {"text": f"p{i}", "toxicity": 0.1}}) + "\n" for i in range(20)))
    gens.write_text("".join(json.dumps({"text": t}) + "\n" for t in items))
    argv = ["task", "detox", "score", "--generations", gens, "--prompts", prompts, "--samples", "2",
            "--scorer", "perspective", "--qps", "200", "--concurrency", "4", "--retries", "1",
            "--cache", tmp_path / "scores.cache.jsonl"]
    code, err = run_cli(capsys, *argv, "--out", tmp_path / "a.json")  # 1 retry: the 2nd 503 is final
    assert code == 2 and "Traceback" not in err and KEY not in err
    assert "Perspective API answered HTTP 503 ({\"error\": {\"code\": 503" in err and "after 2 tries" in err
    code, err = run_cli(capsys, *argv, "--retries", "3", "--out", tmp_path / "b.json")
    assert code == 0, err
    record = json.loads((tmp_path / "b.json").read_text())
    assert record["metrics"]["emt"] == pytest.approx(sum(max(toxicity(items[2 * i]), toxicity(items[2 * i + 1]))
                                                         for i in range(20)) / 20)
    assert set(fake.answered) == set(items) and set(fake.answered.values()) == {1}  # the rerun asked the rest
    code, err = run_cli(capsys, *argv, "--concurrency", "0", "--out", tmp_path / "c.json")
    assert code == 2 and "argument --concurrency: must be between 1 and 1024, got 0" in err
