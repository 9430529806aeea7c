"""Throughput of the Perspective client (tasks/detox/perspective.py) against a fake comments:analyze on
127.0.0.1 (tests/perspective_fake.py), and what it means for SGEAT's evaluation: 25 generations x
99,442 RealToxicityPrompts = 2,486,050 requests.

    python bench/bench_perspective.py [--latency 0.1,0.3] [--json bench/perspective_results.json]

Stand-ins, said plainly: no request leaves this machine. The fake server answers every text after a
round trip drawn per text from [LO, HI] seconds (default 0.1-0.3 s, an assumption, not a measurement
of Google's service; half of it before the request arrives, half before the answer leaves), and
counts arrivals by its own clock. Each row runs the client at a quota (strict_quota on and off) for
about 20 s and reports texts per second (between the server's first and last arrival) and the most
arrivals the server saw in any 1 s window. The client before issue 40 (one request at a time, sends
spaced by 1/qps; taken from the git commit `--old-commit` with `git show`) is measured at the raised
quota beside it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.perspective_fake import FakePerspective, max_in_window, toxicity  # noqa: E402

RTP_PROMPTS, SAMPLES = 99_442, 25
TOTAL = RTP_PROMPTS * SAMPLES


def old_client_class(commit: str):
    src = subprocess.run(["git", "show", f"{commit}:tasks/detox/perspective.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "old_perspective.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_perspective", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PerspectiveClient


def measure(fake, make_client, n: int, label: str) -> dict:
    items = [f"{label} text {i}: a generated continuation" for i in range(n)]
    fake.arrivals.clear()
    c = make_client()
    t0 = time.monotonic()
    scores = c.score(items)
    seconds = time.monotonic() - t0
    assert scores == [toxicity(t) for t in items], "a text got another text's score"
    arrivals = sorted(fake.answer_times())
    rate = (n - 1) / (arrivals[-1] - arrivals[0])  # steady rate: a short run's start and end do not count
    return {"client": label, "texts": n, "seconds": round(seconds, 2), "texts_per_s": round(rate, 3),
            "max_in_1s_window": max_in_window(fake.answer_times()), "projected_days": round(TOTAL / rate / 86400, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", default="0.1,0.3", help="LO,HI seconds of the fake server's answers")
    ap.add_argument("--old-commit", default="HEAD", help="the commit whose tasks/detox/perspective.py is the old one")
    ap.add_argument("--json", default=str(ROOT / "bench" / "perspective_results.json"))
    args = ap.parse_args()
    lo, hi = (float(x) for x in args.latency.split(","))
    half = lambda text: (lo + (hi - lo) * toxicity(text)) / 2  # noqa: E731 - half the way in, half out
    fake = FakePerspective(inbound=half, latency=lambda text: half(text[::-1]))
    from megazoo.core.fs import atomic_file
    from megazoo.tasks.detox.perspective import PerspectiveClient

    rows = []
    try:
        for qps, concurrency, n, strict in ((1, 4, 20, True), (1, 4, 20, False), (10, 16, 200, True),
                                            (100, 64, 2000, True), (100, 64, 2000, False)):
            rows.append({"qps": qps, "concurrency": concurrency, "strict_quota": strict, **measure(
                fake, lambda: PerspectiveClient("KEY", url=fake.url, qps=qps, concurrency=concurrency,
                                                strict_quota=strict, progress=False), n, "new")})
            print(json.dumps(rows[-1]), flush=True)
        old = old_client_class(args.old_commit)
        rows.append({"qps": 100, "concurrency": 1, **measure(
            fake, lambda: old("KEY", url=fake.url, qps=100), 100, "old")})
        print(json.dumps(rows[-1]), flush=True)
    finally:
        fake.stop()
    result = {"latency_s": [lo, hi], "total_requests": TOTAL, "rows": rows}
    with atomic_file(args.json, "w") as f:
        f.write(json.dumps(result, indent=1) + "\n")
    print(f"written to {args.json}")


if __name__ == "__main__":
    main()
