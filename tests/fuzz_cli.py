"""Generated invocations of every command, as a careless or hostile user would type them (issue #36).

    python -m tests.fuzz_cli --n 500 --seed 0          # from the repository root, in .venv

Each invocation picks a command from the parsers (tests/cli_contract.py, so new commands are fuzzed
too), gives its arguments random values — numbers at and beyond their bounds, NaN and infinity,
damaged files, folders where files belong, outputs equal to inputs, `..`, existing targets with and
without --overwrite — and always at least one bad value, so no invocation starts real work. One
worker process imports megazoo once and runs the invocations; the parent times each one out.

Findings: a traceback, an invocation that runs past the timeout (a hang), an exit code other than
0/1/2, an error that is not one megazoo line, or any input or bystander file that changed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.cli_contract import commands, excluded, role, snapshot

BAD_NUMBERS = ("0", "-1", "-5", "abc", "", "1.5", "1e9", "99999999999999999999", "nan", "inf", "-inf", "1e308")
GOOD_INTS = ("1", "2", "3")
GOOD_FLOATS = ("0.5", "0.1", "1")


def make_sandbox(root: Path) -> dict[str, list[str]]:
    """Damaged files and one real tiny model; name lists by kind: good_inputs / bad_inputs."""
    from tests.test_cli_fuzz import _files

    names = _files(root)
    from megazoo.core.data.tokenizers import _gpt2_dir
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.core.parallel.gather import full_state
    from megazoo.zoo.gpt import GPTModel
    from megazoo.zoo.gpt.config import gpt2_layout
    from megazoo.zoo.io import save_model

    cfg = gpt2_layout(num_layers=1, hidden_size=32, num_heads=2, vocab_size=50257, seq_length=32)
    save_model(root / "gen", "gpt", cfg, full_state(GPTModel(cfg).initialize(0), ParallelContext.single()),
               tokenizer=_gpt2_dir())
    (root / "text.txt").write_text("A short line of text.\nAnother line.\n")
    (root / "bad_utf8.txt").write_bytes(b"fine line\n\xff\xfe broken \xc3\x28\n")
    (root / "bystander.txt").write_text("must survive\n")
    bad = [v for k, v in names.items() if k not in ("out",)] + [str(root / "bad_utf8.txt"), "..", ".", "/"]
    return {"good": [str(root / "gen"), str(root / "text.txt")], "bad": bad, "out": [names["out"]]}


def _value(action, rng: random.Random, pools: dict, out_dir: Path, bad: bool) -> str | None:
    """A good or a bad value for one argument; None for a flag without a value."""
    r = role(action)
    if action.nargs == 0:
        return None
    if r is not None and r.role == "output":
        fresh = str(out_dir / f"o{rng.randrange(1000)}")
        if not bad:
            return rng.choice([fresh, fresh + "/sub/..", fresh + ".json"])
        full = out_dir / "full"  # an existing non-empty folder: refused without --overwrite
        full.mkdir(exist_ok=True)
        (full / "mine.txt").write_text("the user's\n")
        existing = [p for p in pools["bad"] + pools["good"] if os.path.lexists(p)]
        return rng.choice(["..", ".", str(full), rng.choice(existing)])
    if r is not None:
        return rng.choice(pools["bad"] if bad else pools["good"])
    if action.choices:
        return "bogus" if bad else str(rng.choice(list(action.choices)))
    bounds = getattr(action.type, "bounds", None)
    name = getattr(action.type, "__name__", "")
    if bounds or name in ("int", "float", "positive_int", "nonnegative_int", "positive_float", "probability"):
        good, wrong = list(GOOD_INTS if "int" in name else GOOD_FLOATS), list(BAD_NUMBERS)
        if bounds:
            lo, hi = bounds
            if lo is not None:
                good.append(str(lo))
                wrong.append(str(lo - 1))
            if hi is not None:
                good.append(str(hi))
                wrong += [str(hi + 1), str(hi * 10)]
        return rng.choice(wrong if bad else good)
    return rng.choice(["", "\x00", "é" * 300] if bad else ["x", "hello world"])


def invocation(cmd, rng: random.Random, pools: dict, out_dir: Path) -> tuple[list[str], list[str]]:
    """One command line with exactly one or two bad values (or an unknown flag) among good ones, and
    the values it gives its outputs."""
    argv = list(cmd.words)
    skip = excluded(cmd)
    picked = []
    for action in cmd.parser._actions:
        if action in skip or isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.nargs == argparse.REMAINDER:
            continue
        needed = not action.option_strings or action.required
        if needed or rng.random() < 0.35:
            picked.append(action)
    with_values = [a for a in picked if a.nargs != 0]
    victims = set(rng.sample(with_values, min(len(with_values), rng.choice((1, 1, 2))))) \
        if with_values and rng.random() < 0.9 else set()
    if not victims:
        argv.append("--no-such-flag")  # no invocation may start real work (training, generating data)
    outputs = []
    for action in picked:
        value = _value(action, rng, pools, out_dir, action in victims)
        if action.option_strings:
            argv.append(action.option_strings[0])
        if value is not None:
            argv.append(value)
            if role(action) is not None and role(action).role == "output":
                outputs.append(value)
    return argv, outputs


def _worker(jobs, results, cwd):
    os.chdir(cwd)
    os.environ["MEGAZOO_DEBUG"] = ""
    import contextlib
    import io

    from megazoo.cli import main

    while True:
        argv = jobs.get()
        if argv is None:
            return
        err = io.StringIO()
        traceback_text = None
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
            except BaseException as e:  # noqa: BLE001 - a traceback is what the fuzzer looks for
                import traceback

                code, traceback_text = None, "".join(traceback.format_exception(e))[-2000:]
        results.put((code, err.getvalue()[-2000:], traceback_text))


def _overwritten(outputs: list[str], argv: list[str], sandbox: Path) -> list[str]:
    """The outputs (relative to the sandbox) this invocation was allowed to replace: with --overwrite,
    the values it gave its declared output arguments."""
    if "--overwrite" not in argv:
        return []
    out = []
    for value in outputs:
        rel = os.path.relpath(os.path.realpath(value), os.path.realpath(sandbox))
        if not rel.startswith(".."):
            out.append(rel)
    return out


def fuzz(n: int, seed: int, timeout: float, root: Path) -> dict:
    rng = random.Random(seed)
    sandbox = root / "sandbox"
    sandbox.mkdir(parents=True)
    pools = make_sandbox(sandbox)
    cwd = root / "cwd"
    cwd.mkdir()
    cmds = commands()
    ctx = mp.get_context("spawn")
    jobs, results = ctx.Queue(), ctx.Queue()

    def start():
        # not a daemon: commands start processes of their own (launcher ranks, Dask workers)
        proc = ctx.Process(target=_worker, args=(jobs, results, cwd), daemon=False)
        proc.start()
        return proc

    proc = start()
    findings, codes = [], {}
    guarded = snapshot(sandbox)
    t0 = time.time()
    for i in range(n):
        cmd = rng.choice(cmds)
        out_dir = root / "outs" / str(i)
        out_dir.mkdir(parents=True)
        argv, outputs = invocation(cmd, rng, pools, out_dir)
        jobs.put(argv)
        try:
            code, err, tb = results.get(timeout=timeout)
        except Exception:  # noqa: BLE001 - queue.Empty: the invocation ran past the timeout
            findings.append({"argv": argv, "problem": f"hang: no answer in {timeout:g} s"})
            proc.kill()
            proc.join()
            jobs, results = ctx.Queue(), ctx.Queue()
            proc = start()
            continue
        codes[str(code)] = codes.get(str(code), 0) + 1
        lines = [line for line in err.splitlines() if line.strip()]
        if tb is not None or "Traceback" in err:
            findings.append({"argv": argv, "problem": "traceback", "detail": (tb or err)[-1200:]})
        elif code not in (0, 1, 2):
            findings.append({"argv": argv, "problem": f"exit code {code}", "detail": err[-600:]})
        elif code != 0 and not (lines and lines[-1].startswith("megazoo")):
            findings.append({"argv": argv, "problem": "not one megazoo line", "detail": err[-600:]})
        now = snapshot(sandbox)
        if now != guarded:
            # with --overwrite, an existing output the user named is theirs to replace
            replaced = _overwritten(outputs, argv, sandbox)
            changed = sorted(k for k in set(now) | set(guarded)
                             if now.get(k) != guarded.get(k) and not any(k == t or k.startswith(t + os.sep)
                                                                        for t in replaced))
            if changed:
                findings.append({"argv": argv, "problem": "inputs or bystanders changed", "detail": changed[:10]})
            shutil.rmtree(sandbox)  # the next invocation gets the fixture as it was
            sandbox.mkdir()
            pools = make_sandbox(sandbox)
            guarded = snapshot(sandbox)
        leftovers = [p.name for p in cwd.iterdir()]
        if leftovers:
            findings.append({"argv": argv, "problem": "wrote into the working directory", "detail": leftovers})
            shutil.rmtree(cwd)
            cwd.mkdir()
        shutil.rmtree(out_dir, ignore_errors=True)
    jobs.put(None)
    proc.join(timeout=30)
    if proc.is_alive():
        proc.kill()
    return {"invocations": n, "seed": seed, "seconds": round(time.time() - t0, 1), "exit_codes": codes,
            "commands": len(cmds), "findings": findings}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz_cli", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=500, help="invocations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=120, help="seconds before an invocation counts as a hang")
    parser.add_argument("--report", help="write the findings as JSON here")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="megazoo-fuzz-") as tmp:
        report = fuzz(args.n, args.seed, args.timeout, Path(tmp))
    text = json.dumps(report, indent=1)
    if args.report:
        Path(args.report).write_text(text + "\n")
    print(f"{report['invocations']} invocations of {report['commands']} commands in {report['seconds']} s; "
          f"exit codes {report['exit_codes']}; {len(report['findings'])} findings")
    for f in report["findings"][:50]:
        print(json.dumps(f)[:1500])
    return 1 if report["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
