"""`megazoo task story evaluate --data FILE.csv --generations FILE.jsonl [--checkpoint DIR] --out FILE.json`.

Writes {"task": "story", "n", "metrics": {"ppl", "repeat_4", "distinct_4", "control_rate"}, ...}:
Repeat-4, Distinct-4 and the keyword control rate of the generations (evaluate.py; against
--keywords FILE when given, else each record's own keywords), and with
--checkpoint the generator's perplexity of the data's gold sentences 2-5 (ppl.py; null without).
"""

from __future__ import annotations

import argparse

PROG = "megazoo task story evaluate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import input_arg, output_arg
    from megazoo.tasks.story.cli_common import MAX_STORIES

    input_arg(parser, "--data", kind="file", required=True, help="the ROCStories CSV the stories were generated from")
    input_arg(parser, "--generations", kind="file", required=True, help="`generate`'s FILE.jsonl")
    input_arg(parser, "--checkpoint", kind="folder", help="the generator, for the perplexity of the gold stories")
    output_arg(parser, "--out", kind="file", required=True, help="FILE.json")
    input_arg(parser, "--keywords", kind="file",
              help="measure the control rate against these keywords (the `generate --keywords` format) instead of "
                   "each record's own: how often keywords appear in stories generated without them")
    parser.add_argument("--limit", type=int_in(0, MAX_STORIES), default=0,
                        help="the first N stories of --data only, as `generate --limit N` wrote them (0: all)")


def read_generations(path) -> list[tuple[int, dict]]:
    """(line number, record) of each `generate` record of a JSONL file."""
    import json

    from megazoo.tasks.story.data import StoryDataError, read_utf8

    rows = []
    for number, line in enumerate(read_utf8(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            ok = (isinstance(row["sentences"], list) and isinstance(row["keywords"], list)
                  and isinstance(row["id"], str))
        except (json.JSONDecodeError, KeyError, TypeError):
            ok = False
        if not ok:
            raise StoryDataError(path, number, 'expected a `generate` record {"id", "keywords", "sentences", ...}')
        rows.append((number, row))
    if not rows:
        raise StoryDataError(path, 1, "no generated stories")
    return rows


def check_matches(rows: list[tuple[int, dict]], stories: list, generations, data, limit: int) -> None:
    """The generations are `generate`'s records of exactly these stories, in order: the same number, the
    same ids (a file generated from another CSV, or cut short, is refused naming both files)."""
    from megazoo.tasks.story.data import StoryDataError

    if limit:
        which = f"the first {len(stories)} stories of {data} (--limit {limit})"
    else:
        which = f"the {len(stories)} stories of {data}"
    if len(rows) != len(stories):
        at = rows[len(stories)][0] if len(rows) > len(stories) else rows[-1][0]  # the first extra, or the last
        hint = "" if limit else "; for `generate --limit N` output give --limit N here too"
        raise StoryDataError(generations, at, f"{len(rows)} generated stories for {which}; the generations must "
                                              f"hold one record per story, in its order{hint}")
    for i, ((number, row), story) in enumerate(zip(rows, stories), start=1):
        if row["id"] != story.id:
            raise StoryDataError(generations, number, f"story id {row['id']!r}, but story {i} of {data} is "
                                                      f"{story.id!r}; were the generations made from another file?")


def run(args) -> int:
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.story.cli_common import errors, fail, need
    from megazoo.tasks.story.data import read_rocstories
    from megazoo.tasks.story.delex import delexicalise
    from megazoo.tasks.story.evaluate import control_counts, distinct_4, repeat_4

    try:
        stories = read_rocstories(need(args.data, "--data"))
        stories = stories[: args.limit] if args.limit > 0 else stories
        rows = read_generations(need(args.generations, "--generations"))
        check_matches(rows, stories, args.generations, args.data, args.limit)
        gens = [row for _, row in rows]
        sentences = [g["sentences"] for g in gens]
        if args.keywords:
            from megazoo.tasks.story.keywords_file import read_keywords

            measured = read_keywords(need(args.keywords, "--keywords"), len(gens), args.generations)
        else:
            measured = [g["keywords"] for g in gens]
        hit, total = control_counts(sentences, measured)
        ppl = None
        if args.checkpoint:
            from megazoo.tasks.detox.model import load_decoder
            from megazoo.tasks.story.ppl import story_perplexity

            from megazoo.tasks.story.models import run_checkpoints

            model, tok = load_decoder(run_checkpoints(args.checkpoint))
            ppl = story_perplexity(model, tok, [delexicalise(s) for s in stories])
        record = {"task": "story", "n": len(gens), "data": str(args.data), "generations": str(args.generations),
                  "metrics": {"ppl": ppl, "repeat_4": repeat_4(sentences), "distinct_4": distinct_4(sentences),
                              "control_rate": hit / total if total else None},
                  "keywords_given": total, "keywords_followed": hit}
        write_json_atomic(args.out, record, indent=1)
    except errors() as e:
        return fail(PROG, e)
    m = record["metrics"]
    print(f"{len(gens)} stories: repeat-4 {m['repeat_4']:.3f}, distinct-4 {m['distinct_4']:.3f}, control rate "
          f"{'-' if m['control_rate'] is None else format(m['control_rate'], '.3f')}, ppl "
          f"{'-' if ppl is None else format(ppl, '.2f')}; written to {args.out}")
    return 0
