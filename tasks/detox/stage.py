"""What the stages share: scorer and sampling options with their bounds, the check of the decoder
folder before any rank starts, the generation of rows on a layout (sample and evaluate), and the
checks of the files a stage derives from its output (the generations beside FILE.json, the default
score cache).

A stage's user errors (ValueError, MissingFile) reach megazoo.cli's boundary, which prints them in
one line with exit code 2; only a rank of a tp x pp layout, where that boundary is not, reports its
own (eval/taskkit.on_rank)."""

from __future__ import annotations

import argparse
from pathlib import Path

from megazoo.core.argtypes import float_in, int_in, probability
from megazoo.core.fs import input_arg, output_arg

SEED = int_in(0, 2**32 - 1)


def check_checkpoint(checkpoint) -> Path:
    """The decoder folder, checked before any rank starts (eval/taskkit.load_decoder loads it)."""
    from megazoo.eval.readers.common import MissingFile

    path = Path(checkpoint)
    if not path.is_dir():
        raise MissingFile(f"--checkpoint {path}: no such folder (give a Hugging Face folder or a megazoo "
                          f"checkpoint of a GPT/Llama decoder)")
    return path


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
    from megazoo.tasks.detox.scorers import add_perspective_arguments

    add_perspective_arguments(parser)  # --concurrency, --retries: every stage that scores


def make_scorer(args):
    from megazoo.tasks.detox.scorers import make_scorer as make
    from megazoo.tasks.detox.scorers import perspective_options

    return make(args.scorer, **perspective_options(args)) if args.scorer == "perspective" else make(args.scorer)


def check_scorer_name(spec: str) -> None:
    """An unknown scorer name, before any model loads."""
    from megazoo.eval.readers.common import MissingFile
    from megazoo.tasks.detox.scorers import make_scorer as make

    if spec in ("profanity", "perspective") or (spec.startswith("hf:") and len(spec) > 3):
        if spec.startswith("hf:") and not (Path(spec[3:]) / "config.json").is_file():
            raise MissingFile(f"--scorer {spec}: no config.json there (give a Hugging Face sequence classifier "
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


def write_generations(args, ctx, prompts: list, records: list[dict], path, label: str = "samples") -> bool:
    """Sample rows args.start.. of `prompts` (text or None) with the decoder at args.checkpoint, in
    this process (ctx None) or on one rank of a tp x pp layout, and append a record a row to `path`
    from rank 0 (records[i]: the row's other fields); with args.replace the new file takes the old
    one's place only once complete (stream.write_replacement). True on the rank that writes."""
    from megazoo.eval.taskkit import load_decoder
    from megazoo.tasks.detox.stream import generate_rows, stream_meta, write_replacement

    main = ctx is None or ctx.rank == 0
    model, tok = load_decoder(args.checkpoint, ctx)
    s = sampling(args)

    def write(target):
        generate_rows(model, tok, prompts, records, s, target, args.start, progress=main and not args.no_progress,
                      label=label)

    if args.replace and main:
        write_replacement(path, stream_meta(s, prompts, args.checkpoint), write)
    else:
        write(path if main else None)
    return main


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
