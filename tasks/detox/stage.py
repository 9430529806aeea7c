"""What the stages share: scorer and sampling options with their bounds, the checks of the files a
stage derives from its output (the generations beside FILE.json, the default score cache), the
multi-rank runner, the JSON writer."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from megazoo.core.argtypes import float_in, int_in, probability
from megazoo.core.fs import input_arg, output_arg

# the user's mistakes: one line, exit 2 (other OSErrors go to megazoo.cli's error boundary)
ERRORS = (ValueError, FileNotFoundError)

SEED = int_in(0, 2**32 - 1)


def fail(prog: str, e) -> int:
    print(f"{prog}: error: {e}", file=sys.stderr)
    return 2


def add_scorer(parser: argparse.ArgumentParser) -> None:
    input_arg(parser, "--scorer", default="profanity",
              help="profanity (offline, default), hf:DIR (a Hugging Face sequence classifier folder) or perspective "
                   "(key in $PERSPECTIVE_API_KEY)")
    # a cache is continued, never replaced: only lines of a score cache are accepted in it (cache.py)
    output_arg(parser, "--cache", kind="file", resumable=True,
               help="score cache, JSON lines keyed by text hash (default FILE.cache.jsonl beside the output); "
                    "continued when it exists")
    parser.add_argument("--qps", type=float_in(0.001, 1000.0), default=1.0,
                        help="perspective: requests per second (default 1)")


def make_scorer(args):
    from megazoo.tasks.detox.scorers import make_scorer as make

    return make(args.scorer, qps=args.qps) if args.scorer == "perspective" else make(args.scorer)


def check_scorer_name(spec: str) -> None:
    """An unknown scorer name, before any model loads."""
    from megazoo.tasks.detox.scorers import make_scorer as make

    if spec in ("profanity", "perspective") or (spec.startswith("hf:") and len(spec) > 3):
        if spec.startswith("hf:") and not (Path(spec[3:]) / "config.json").is_file():
            raise FileNotFoundError(f"--scorer {spec}: no config.json there (give a Hugging Face sequence classifier "
                                    f"folder)")
        return
    make(spec)  # raises with the names


def add_sampling(parser: argparse.ArgumentParser, max_new_tokens: int, batch: int) -> None:
    parser.add_argument("--max-new-tokens", type=int_in(1, 1 << 16), default=max_new_tokens)
    parser.add_argument("--top-p", type=probability, default=0.9, help="nucleus sampling's p, in (0, 1]")
    parser.add_argument("--temperature", type=float_in(1e-4, 100.0), default=1.0)
    parser.add_argument("--batch", type=int_in(1, 4096), default=batch,
                        help="rows per generate call (part of what fixes the texts: keep it when resuming)")
    parser.add_argument("--seed", type=SEED, default=0)
    parser.add_argument("--tp", type=int_in(1, 64), default=1, help="tensor-parallel ranks (local)")
    parser.add_argument("--pp", type=int_in(1, 64), default=1, help="pipeline stages (local)")
    parser.add_argument("--no-progress", action="store_true")


def sampling(args):
    from megazoo.tasks.detox.stream import Sampling

    s = Sampling(args.max_new_tokens, args.top_p, args.temperature, args.batch, args.seed)
    s.check()
    for name in ("tp", "pp"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be at least 1, got {getattr(args, name)}")
    return s


def stem(out) -> Path:
    out = Path(out)
    return out.with_suffix("") if out.suffix in (".json", ".jsonl") else out


def check_derived(inputs: list[tuple[str, object]], derived: list[tuple[str, object]], outputs=()) -> None:
    """The files a stage writes beside its declared output without a flag of their own (the default
    score cache, evaluate's generations) and the hf:DIR of --scorer, checked by the output policy as
    the dispatcher checks declared ones: a derived file may not be an input (nor lie in an input
    folder); no output may lie in the scorer's folder. Derived files are continued, not replaced
    (each reader accepts only what its stage wrote), so an existing one is no refusal here."""
    from megazoo.core.fs import Declared, PathRole, check_paths

    ins = [Declared(label, str(path), PathRole("input")) for label, path in inputs if path]
    outs = [Declared(label, str(path), PathRole("output", "file", resumable=True)) for label, path in derived]
    outs += [Declared(label, str(path), PathRole("output", "file", resumable=True)) for label, path in outputs if path]
    check_paths(ins, outs)


def scorer_input(args) -> list[tuple[str, object]]:
    """--scorer hf:DIR as an input folder (the other scorers read no file)."""
    return [("--scorer", args.scorer[3:])] if args.scorer.startswith("hf:") else []


def write_json(path, record: dict) -> Path:
    from megazoo.core.fs import write_json_atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, record, indent=2)
    return path
