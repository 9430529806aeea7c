"""Which tests are `slow`: measured, not guessed (issue #36: the quick tier `pytest -m "not slow"`).

    python -m pytest -q -p no:cacheprovider --durations=0 > durations.log     # the whole suite, once
    python -m tests.slow_list durations.log --budget 110                       # rewrites tests/slow.txt

A test's cost is its setup + call + teardown time in that log. The cheapest tests fill the quick
tier's budget (seconds); every other test is listed in tests/slow.txt with its seconds, which
conftest.py marks `slow` at collection and uses to hand out the longest files first to pytest-xdist's
workers. Tests marked `slow` in their file stay slow whatever the list says. A test
that is new since the list was made is in the quick tier until the list is made again.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

LIST = Path(__file__).with_name("slow.txt")
LINE = re.compile(r"^\s*([\d.]+)s (setup|call|teardown)\s+(\S+)")


SHARED_SETUP = 3.0  # a setup this long is a module fixture that every test of the module needs


def costs(log: str) -> tuple[dict[str, float], set[str]]:
    """(test -> seconds, the modules whose fixtures take SHARED_SETUP or more to set up)."""
    out: dict[str, float] = defaultdict(float)
    heavy = set()
    for line in log.splitlines():
        m = LINE.match(line)
        if m:
            out[m.group(3)] += float(m.group(1))
            if m.group(2) == "setup" and float(m.group(1)) >= SHARED_SETUP:
                heavy.add(m.group(3).split("::")[0])
    return dict(out), heavy


def split(cost: dict[str, float], heavy: set[str], budget: float) -> tuple[list[str], float]:
    """(the slow tests, the quick tier's total) for a quick tier of at most `budget` seconds. A module
    with a heavy fixture is slow as a whole: its fixture would be paid by whichever test runs first."""
    total, slow = 0.0, []
    for test, seconds in sorted(cost.items(), key=lambda kv: kv[1]):
        if test.split("::")[0] not in heavy and total + seconds <= budget:
            total += seconds
        else:
            slow.append(test)
    return sorted(slow), total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.slow_list", description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="the output of a whole-suite run with --durations=0")
    parser.add_argument("--budget", type=float, default=110,
                        help="seconds of measured test time the quick tier may take (110 gave 3 min 53 s on 2 "
                             "cores, with pytest's start-up and the ~1,000 tests too short to be listed)")
    args = parser.parse_args(argv)
    cost, heavy = costs(Path(args.log).read_text(encoding="utf-8"))
    slow, quick = split(cost, heavy, args.budget)
    header = (f"# tests marked slow by tests/conftest.py: made by `python -m tests.slow_list` from a whole-suite "
              f"run ({sum(cost.values()):.0f} s measured; quick tier {quick:.0f} s of {len(cost) - len(slow)} tests)\n")
    LIST.write_text(header + "".join(f"{cost[t]:8.2f} {t}\n" for t in slow))
    print(f"{len(slow)} slow tests, {len(cost) - len(slow)} quick ones taking {quick:.0f} s -> {LIST}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
