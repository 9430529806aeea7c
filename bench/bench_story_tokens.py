"""Issue 40, point 5, on hand-made and generated stories (not ROCStories): what the word tokens change
in Repeat-4/Distinct-4, and how RAKE's keywords (the paper's, now the default) compare with YAKE!'s.

    python bench/bench_story_tokens.py [--stories 600]

The "generations" scored are the gold sentences 2-5 of each set (no model), so the figures show the
tokenisation alone. Prints a Markdown section for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from megazoo.eval.metrics.generation import distinct_n, repeat_n
from megazoo.tasks.story.cli_common import package_file
from megazoo.tasks.story.data import read_rocstories
from megazoo.tasks.story.delex import delexicalise
from megazoo.tasks.story.evaluate import story_tokens
from megazoo.tasks.story.generate import write_generated
from megazoo.tasks.story.keywords import story_keywords


def token_rows(name: str, stories) -> list[str]:
    gens = [s.sentences[1:] for s in stories]
    spaces = [" ".join(g).lower() for g in gens]
    words = [story_tokens(g) for g in gens]
    return [f"| {name} | whitespace (before) | {repeat_n(spaces, 4):.3f} | {distinct_n(spaces, 4):.3f} |",
            f"| {name} | word tokens (now) | {repeat_n(words, 4):.3f} | {distinct_n(words, 4):.3f} |"]


def keyword_row(name: str, stories) -> str:
    delexed = [delexicalise(s) for s in stories]
    out, seconds = {}, {}
    for extractor in ("rake", "yake"):
        t0 = time.perf_counter()
        out[extractor] = [ws for s in tqdm(delexed, desc=f"{name} {extractor}", leave=False)
                          for ws in story_keywords(s.sentences, 2, extractor)]
        seconds[extractor] = time.perf_counter() - t0
    pairs = list(zip(out["rake"], out["yake"]))
    same = sum(a == b for a, b in pairs) / len(pairs)
    same_set = sum(set(a) == set(b) for a, b in pairs) / len(pairs)
    shared = sum(len(set(a) & set(b)) for a, b in pairs) / max(1, sum(len(set(a) | set(b)) for a, b in pairs))
    vocab = {k: len({w for ws in v for w in ws}) for k, v in out.items()}
    ms = {k: 1000 * v / len(pairs) for k, v in seconds.items()}
    return (f"| {name} | {len(pairs)} | {same:.3f} | {same_set:.3f} | {shared:.3f} | {vocab['rake']} / {vocab['yake']} "
            f"| {ms['rake']:.2f} / {ms['yake']:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stories", type=int, default=600)
    args = ap.parse_args()
    hand = read_rocstories(package_file("handwritten.csv"))
    with tempfile.TemporaryDirectory() as tmp:
        write_generated(Path(tmp), args.stories, 0)
        generated = read_rocstories(Path(tmp) / "stories.csv")
    sets = [("hand-written (24)", hand), (f"generated ({len(generated)})", generated)]
    lines = ["| set | tokens | Repeat-4 | Distinct-4 |", "|---|---|---:|---:|"]
    for name, stories in sets:
        lines += token_rows(name, stories)
    lines += ["", "| set | sentences | same keywords, same order | same set | shared / union | vocabulary RAKE / YAKE "
                  "| ms per sentence RAKE / YAKE |", "|---|---:|---:|---:|---:|---|---|"]
    lines += [keyword_row(name, stories) for name, stories in sets]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
