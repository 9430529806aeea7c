"""`megazoo task story evaluate --data FILE.csv --generations FILE.jsonl [--checkpoint DIR] --out FILE.json`.

Writes FILE.json {"task": "story", "n", "metrics": {"repeat_4", "distinct_4", "control_rate", "ppl"},
"predictions": "FILE.predictions.jsonl", ...} through the task-evaluation kit (eval/taskkit.py):
Repeat-4, Distinct-4 and the keyword control rate of the generations (evaluate.py; against
--keywords FILE when given, else each record's own keywords; absent when no keyword was given), and
with --checkpoint the generator's perplexity of the data's gold sentences 2-5 (ppl.py; absent
without). FILE.predictions.jsonl holds one line per story: its id, sentences, the keywords measured
and how many of them its sentences follow.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import input_arg, output_arg
    from megazoo.eval.taskkit import evaluation_outputs
    from megazoo.tasks.story.cli_common import MAX_STORIES

    input_arg(parser, "--data", kind="file", required=True, hf=True,
              help="the ROCStories CSV the stories were generated from")
    input_arg(parser, "--generations", kind="file", required=True, help="`sample`'s FILE.jsonl")
    input_arg(parser, "--checkpoint", kind="folder", help="the generator, for the perplexity of the gold stories")
    output_arg(parser, "--out", kind="file", required=True, also=evaluation_outputs(),
               help="FILE.json (and FILE.predictions.jsonl beside it)")
    input_arg(parser, "--keywords", kind="file",
              help="measure the control rate against these keywords (the `sample --keywords` format) instead of "
                   "each record's own: how often keywords appear in stories generated without them")
    parser.add_argument("--limit", type=int_in(0, MAX_STORIES), default=0,
                        help="the first N stories of --data only, as `sample --limit N` wrote them (0: all)")


def read_generations(path) -> list[tuple[int, dict]]:
    """(line number, record) of each `sample` record of a JSONL file."""
    from megazoo.tasks.story.data import read_records

    return read_records(path, lambda row: isinstance(row["sentences"], list) and isinstance(row["keywords"], list)
                        and isinstance(row["id"], str),
                        'expected a `sample` record {"id", "keywords", "sentences", ...}', "no generated stories")


def check_matches(rows: list[tuple[int, dict]], stories: list, generations, data, limit: int) -> None:
    """The generations are `sample`'s records of exactly these stories, in order: the same number, the
    same ids (a file generated from another CSV, or cut short, is refused naming both files)."""
    from megazoo.tasks.story.data import StoryDataError

    if limit:
        which = f"the first {len(stories)} stories of {data} (--limit {limit})"
    else:
        which = f"the {len(stories)} stories of {data}"
    if len(rows) != len(stories):
        at = rows[len(stories)][0] if len(rows) > len(stories) else rows[-1][0]  # the first extra, or the last
        hint = "" if limit else "; for `sample --limit N` output give --limit N here too"
        raise StoryDataError(generations, at, f"{len(rows)} generated stories for {which}; the generations must "
                                              f"hold one record per story, in its order{hint}")
    for i, ((number, row), story) in enumerate(zip(rows, stories), start=1):
        if row["id"] != story.id:
            raise StoryDataError(generations, number, f"story id {row['id']!r}, but story {i} of {data} is "
                                                      f"{story.id!r}; were the generations made from another file?")


def run(args) -> int:
    from megazoo.eval.taskkit import write_evaluation
    from megazoo.tasks.story.cli_common import need
    from megazoo.tasks.story.data import read_rocstories
    from megazoo.tasks.story.evaluate import control_counts, distinct_4, repeat_4

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
    predictions = []
    for g, kws in zip(gens, measured):
        hit, total = control_counts([g["sentences"]], [kws])
        predictions.append({"id": g["id"], "sentences": g["sentences"], "keywords": kws, "keywords_given": total,
                            "keywords_followed": hit})
    hit = sum(p["keywords_followed"] for p in predictions)
    total = sum(p["keywords_given"] for p in predictions)
    metrics = {"repeat_4": repeat_4(sentences), "distinct_4": distinct_4(sentences)}
    if total:  # no keyword given: nothing to follow, no control rate
        metrics["control_rate"] = hit / total
    if args.checkpoint:
        metrics["ppl"] = gold_perplexity(args.checkpoint, stories)
    write_evaluation(args.out, "story", len(gens), metrics, predictions, data=str(args.data),
                     generations=str(args.generations), checkpoint=str(args.checkpoint) if args.checkpoint else None,
                     keywords=str(args.keywords) if args.keywords else None, keywords_given=total,
                     keywords_followed=hit)
    rate, ppl = metrics.get("control_rate"), metrics.get("ppl")
    print(f"{len(gens)} stories: repeat-4 {metrics['repeat_4']:.3f}, distinct-4 {metrics['distinct_4']:.3f}, "
          f"control rate {'-' if rate is None else format(rate, '.3f')}, ppl "
          f"{'-' if ppl is None else format(ppl, '.2f')}; written to {args.out}")
    return 0


def gold_perplexity(checkpoint, stories) -> float:
    """The generator's perplexity of the stories' gold sentences 2-5 (delexicalised, as it was trained)."""
    from megazoo.eval.taskkit import load_decoder
    from megazoo.tasks.story.delex import delexicalise
    from megazoo.tasks.story.ppl import story_perplexity

    model, tok = load_decoder(checkpoint, use="perplexity")
    return story_perplexity(model, tok, [delexicalise(s) for s in stories])
