"""`megazoo task story data OUT_DIR [--stories 600] [--seed 0] [--rocstories FILE.csv] [--keyword-extractor rake|yake]`.

Writes into OUT_DIR: stories.csv and its seeded 90/5/5 split train.csv, valid.csv, test.csv
(generated from templates, or a real ROCStories CSV given with --rocstories), handwritten.csv (the
package's hand-written evaluation stories), test-keywords.jsonl and handwritten-keywords.jsonl (the
gold sentences' keywords, the `sample --keywords` format; each line records its `extractor`, RAKE
by default as in the paper, `--keyword-extractor yake` for YAKE!) and knowledge.csv (a WordNet knowledge
base in ConceptNet's CSV format over every keyword of these stories and their antonyms).
"""

from __future__ import annotations

import argparse
import shutil


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from megazoo.core.argtypes import int_in
    from megazoo.core.fs import input_arg, output_arg
    from megazoo.tasks.story.cli_common import MAX_GENERATED, MAX_KEYWORDS, MAX_SEED

    output_arg(parser, "out", kind="folder", help="the folder to write")
    parser.add_argument("--stories", type=int_in(1, MAX_GENERATED), default=600,
                        help="generated stories (default 600)")
    parser.add_argument("--seed", type=int_in(0, MAX_SEED), default=0, help="generation and split seed")
    input_arg(parser, "--rocstories", kind="file", hf=True,
              help="split this ROCStories CSV file instead of generating stories")
    parser.add_argument("--keywords", type=int_in(1, MAX_KEYWORDS), default=2, help="keywords per sentence (default 2)")
    parser.add_argument("--keyword-extractor", choices=("rake", "yake"), default="rake",
                        help="how the gold sentences' keywords are extracted: rake (the paper's, default) or yake")


def write_keywords(path, stories, k: int, extractor: str = "rake") -> None:
    from megazoo.tasks.story.delex import delexicalise
    from megazoo.tasks.story.keywords import story_keywords
    from megazoo.tasks.story.weak_labels import write_jsonl

    rows = []
    for s in stories:
        d = delexicalise(s)
        rows.append({"id": s.id, "keywords": story_keywords(d.sentences, k, extractor)[1:], "extractor": extractor})
    write_jsonl(path, rows)


def run(args) -> int:
    from megazoo.core.fs import atomic_folder

    # the output policy has refused an existing non-empty folder without --overwrite; everything is
    # written into a scratch folder that replaces OUT_DIR only once complete
    with atomic_folder(args.out, overwrite=args.overwrite) as out:
        triples, vocab = write_set(out, args)
    print(f"stories, splits, hand-written set, {args.keyword_extractor} keywords and a knowledge base of "
          f"{len(triples)} WordNet assertions over {len(vocab)} words written to {args.out}")
    return 0


def write_set(out, args) -> tuple[list, set]:
    """Every file of the set into the folder `out`; (the knowledge triples, the keyword vocabulary)."""
    from megazoo.tasks.story.cli_common import package_file
    from megazoo.tasks.story.data import read_rocstories, split_stories, write_rocstories
    from megazoo.tasks.story.delex import delexicalise
    from megazoo.tasks.story.generate import write_generated
    from megazoo.tasks.story.keywords import story_keywords
    from megazoo.tasks.story.knowledge import write_conceptnet
    from megazoo.tasks.story.wordnet_kb import antonym, build_wordnet_kb

    if args.rocstories:
        stories = read_rocstories(args.rocstories)
        write_rocstories(out / "stories.csv", stories)
        for name, part in split_stories(stories, args.seed).items():
            write_rocstories(out / f"{name}.csv", part)
    else:
        write_generated(out, args.stories, args.seed)
    shutil.copyfile(package_file("handwritten.csv"), out / "handwritten.csv")
    extractor = args.keyword_extractor
    write_keywords(out / "test-keywords.jsonl", read_rocstories(out / "test.csv"), args.keywords, extractor)
    hand = read_rocstories(out / "handwritten.csv")
    write_keywords(out / "handwritten-keywords.jsonl", hand, args.keywords, extractor)
    vocab = set()
    for s in read_rocstories(out / "stories.csv") + hand:
        for words in story_keywords(delexicalise(s).sentences, args.keywords, extractor):
            vocab.update(words)
    vocab |= {a for a in (antonym(w) for w in sorted(vocab)) if a}
    triples = build_wordnet_kb(vocab)
    write_conceptnet(out / "knowledge.csv", triples)
    return triples, vocab
