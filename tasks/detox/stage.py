"""What the stages share: scorer and sampling options, the multi-rank runner, the JSON writer."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# the user's mistakes: one line, exit 2 (other OSErrors go to megazoo.cli's error boundary)
ERRORS = (ValueError, FileNotFoundError)


def fail(prog: str, e) -> int:
    print(f"{prog}: error: {e}", file=sys.stderr)
    return 2


def add_scorer(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scorer", default="profanity", help="profanity (offline, default), hf:DIR (a Hugging Face "
                        "sequence classifier folder) or perspective (key in $PERSPECTIVE_API_KEY)")
    parser.add_argument("--cache", help="score cache, JSON lines keyed by text hash (default FILE.cache.jsonl "
                                        "beside the output)")
    parser.add_argument("--qps", type=float, default=1.0, help="perspective: requests per second (default 1)")


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
    parser.add_argument("--max-new-tokens", type=int, default=max_new_tokens)
    parser.add_argument("--top-p", type=float, default=0.9)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=batch, help="rows per generate call (part of what fixes the "
                                                                 "texts: keep it when resuming)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel ranks (local)")
    parser.add_argument("--pp", type=int, default=1, help="pipeline stages (local)")
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


def write_json(path, record: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, path)
    return path
