"""`megazoo task story sample --checkpoint DIR --data FILE.csv --out FILE.jsonl [--keywords FILE]
[--antonyms] [--keyword-model DIR] [--knowledge FILE] [--ranker DIR]`.

Writes sentences 2-5 of every story of FILE.csv (delexicalised; `display` holds them with the
story's names back) from its first sentence, one JSON line per story:
{"id", "first", "keywords": [[...] per step], "knowledge": [[...] per step], "sentences": [4], "display"}.
Keywords: --keywords FILE (keywords_file.py), else the --keyword-model's predictions, else none
(uncontrolled). --antonyms replaces each keyword by a WordNet antonym where one exists (the paper's
-ANT experiment; `original_keywords` records what was replaced). Knowledge: retrieved from
--knowledge for the keywords, ordered by the --ranker (else in the base's order), the top
--n-knowledge kept; without --knowledge the stories are written without knowledge. (`generate`, the
stage's older name, still works.)
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import input_arg, output_arg
    from megazoo.tasks.story.cli_common import MAX_BATCH, MAX_CANDIDATES, MAX_NEW_TOKENS, MAX_STORIES

    input_arg(parser, "--checkpoint", kind="folder", required=True,
              help="the generator (a story training run or any decoder)")
    input_arg(parser, "--data", kind="file", required=True, hf=True,
              help="a ROCStories CSV; the first sentences are used")
    output_arg(parser, "--out", kind="file", required=True, help="FILE.jsonl")
    input_arg(parser, "--keywords", kind="file", help="JSONL: four lists of keywords per story, in the data's order")
    parser.add_argument("--antonyms", action="store_true", help="replace keywords by WordNet antonyms (-ANT)")
    input_arg(parser, "--keyword-model", kind="folder",
              help="the keyword predictor (used when --keywords is not given)")
    input_arg(parser, "--knowledge", kind="file", hf=True, help="the knowledge base (ConceptNet CSV or TSV)")
    input_arg(parser, "--ranker", kind="folder", help="the knowledge ranker (a story-ranker training run)")
    parser.add_argument("--n-knowledge", type=int_in(0, MAX_CANDIDATES), default=2,
                        help="knowledge sentences in a prompt (2; 0: none)")
    parser.add_argument("--candidates", type=int_in(1, MAX_CANDIDATES), default=8,
                        help="knowledge sentences ranked (8)")
    parser.add_argument("--limit", type=int_in(0, MAX_STORIES), default=0,
                        help="only the first N stories (0: all; a --keywords file still has a line for every story "
                             "of --data)")
    parser.add_argument("--max-new-tokens", type=int_in(1, MAX_NEW_TOKENS), default=32)
    parser.add_argument("--batch", type=int_in(1, MAX_BATCH), default=16)


def run(args) -> int:
    from megazoo.tasks.story.cli_common import need
    from megazoo.tasks.story.data import read_rocstories
    from megazoo.tasks.story.delex import delexicalise, relexicalise
    from megazoo.tasks.story.keywords_file import read_keywords
    from megazoo.tasks.story.knowledge import KnowledgeBase
    from megazoo.tasks.story.loop import write_stories
    from megazoo.tasks.story.models import Decoder, Ranker
    from megazoo.tasks.story.weak_labels import write_jsonl

    stories = read_rocstories(need(args.data, "--data"))
    given = read_keywords(need(args.keywords, "--keywords"), len(stories), args.data) if args.keywords else None
    if args.limit > 0:
        stories = stories[: args.limit]
        given = given[: args.limit] if given is not None else None
    kb = KnowledgeBase.load(need(args.knowledge, "--knowledge")) if args.knowledge else None
    need(args.checkpoint, "--checkpoint", folder=True)
    stories = [delexicalise(s) for s in stories]
    predictor = None
    if given is None and args.keyword_model:
        predictor = Decoder(need(args.keyword_model, "--keyword-model", folder=True), 12, args.batch)
    ranker = Ranker(need(args.ranker, "--ranker", folder=True)) if args.ranker else None
    generator = Decoder(args.checkpoint, args.max_new_tokens, args.batch)
    records = write_stories(stories, generator, given, predictor, kb, ranker, args.antonyms, args.n_knowledge,
                            args.candidates)
    for r, s in zip(records, stories):
        r["display"] = [relexicalise(x, s.names, len(s.names))[0] for x in [r["first"], *r["sentences"]]]
    write_jsonl(args.out, records)
    mode = "given" if given is not None else "predicted" if predictor else "no"
    print(f"{len(records)} stories written to {args.out} ({mode} keywords{', antonyms' if args.antonyms else ''}, "
          f"{'ranked ' if ranker else ''}{'knowledge' if kb else 'no knowledge'})")
    return 0
