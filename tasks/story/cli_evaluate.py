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
    parser.add_argument("--data", required=True, help="the ROCStories CSV the stories were generated from")
    parser.add_argument("--generations", required=True, help="`generate`'s FILE.jsonl")
    parser.add_argument("--checkpoint", help="the generator, for the perplexity of the gold stories")
    parser.add_argument("--out", required=True, help="FILE.json")
    parser.add_argument("--keywords", help="measure the control rate against these keywords (the `generate "
                                           "--keywords` format) instead of each record's own: how often keywords "
                                           "appear in stories generated without them")
    parser.add_argument("--limit", type=int, default=0, help="perplexity on the first N stories only (0: all)")


def read_generations(path) -> list[dict]:
    import json

    from megazoo.tasks.story.data import StoryDataError

    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                ok = isinstance(row["sentences"], list) and isinstance(row["keywords"], list)
            except (json.JSONDecodeError, KeyError, TypeError):
                ok = False
            if not ok:
                raise StoryDataError(path, number, 'expected a `generate` record {"id", "keywords", "sentences", ...}')
            rows.append(row)
    if not rows:
        raise StoryDataError(path, 1, "no generated stories")
    return rows


def run(args) -> int:
    from megazoo.core.fs import write_json_atomic
    from megazoo.tasks.story.cli_common import errors, fail, need
    from megazoo.tasks.story.data import read_rocstories
    from megazoo.tasks.story.delex import delexicalise
    from megazoo.tasks.story.evaluate import control_counts, distinct_4, repeat_4

    try:
        stories = read_rocstories(need(args.data, "--data"))
        gens = read_generations(need(args.generations, "--generations"))
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
            chosen = stories[: args.limit] if args.limit > 0 else stories
            ppl = story_perplexity(model, tok, [delexicalise(s) for s in chosen])
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
