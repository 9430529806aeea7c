"""The story task's evaluation for `megazoo eval leaderboard` (entry point megazoo.evaluations:story).

A suite entry writes sentences 2-5 of every story of a ROCStories-format CSV with each model (a story
generator checkpoint, or any GPT/Llama decoder) given the gold sentences' keywords (RAKE by default,
as `megazoo task story data` writes them; `keyword_extractor: yake` for YAKE!) and, with `knowledge`,
the knowledge retrieved for them:

    - {name: story, path: runs/story/data/handwritten.csv, knowledge: runs/story/data/knowledge.csv}

The headline is the keyword control rate (higher is better); Repeat-4, Distinct-4 and the perplexity
of the gold sentences come with it.
"""

from __future__ import annotations

from megazoo.eval.registry import Evaluation
from megazoo.eval.suite_options import suite_int

METRICS = ("control_rate", "repeat_4", "distinct_4", "ppl")


def run(checkpoint: str, path: str, entry: dict) -> dict:
    from megazoo.tasks.story.data import read_rocstories
    from megazoo.tasks.story.delex import delexicalise
    from megazoo.tasks.story.evaluate import control_rate, distinct_4, repeat_4
    from megazoo.tasks.story.keywords import check_extractor, story_keywords
    from megazoo.tasks.story.knowledge import KnowledgeBase
    from megazoo.tasks.story.loop import write_stories
    from megazoo.tasks.story.models import Decoder
    from megazoo.tasks.story.cli_common import MAX_BATCH, MAX_KEYWORDS, MAX_NEW_TOKENS, MAX_STORIES
    from megazoo.tasks.story.ppl import story_perplexity

    limit = suite_int(entry, "limit", 0, 0, MAX_STORIES)  # 0: all
    keywords = suite_int(entry, "keywords", 2, 1, MAX_KEYWORDS)
    new = suite_int(entry, "max_new_tokens", 32, 1, MAX_NEW_TOKENS)
    batch = suite_int(entry, "batch_size", 16, 1, MAX_BATCH)
    stories = [delexicalise(s) for s in read_rocstories(path)]
    stories = stories[:limit] if limit > 0 else stories
    extractor = check_extractor(entry.get("keyword_extractor", "rake"), "suite option keyword_extractor")
    given = [story_keywords(s.sentences, keywords, extractor)[1:] for s in stories]
    kb = KnowledgeBase.load(entry["knowledge"]) if entry.get("knowledge") else None
    gen = Decoder(checkpoint, new, batch)
    records = write_stories(stories, gen, given, None, kb)
    sentences = [r["sentences"] for r in records]
    return {"control_rate": control_rate(sentences, given), "repeat_4": repeat_4(sentences),
            "distinct_4": distinct_4(sentences), "ppl": story_perplexity(gen.model, gen.tok, stories),
            "n": len(stories)}


EVALUATION = Evaluation(
    name="story", data="a ROCStories-format CSV (storyid,storytitle,sentence1..sentence5)", metrics=METRICS,
    headline="control_rate", run=run, kinds=("story", "lm"), higher_is_better=True,
    options={"knowledge": "a knowledge base (ConceptNet CSV or TSV) to retrieve from (default none)",
             "keywords": "keywords per sentence (default 2)",
             "keyword_extractor": "rake (the paper's, default) or yake", "max_new_tokens": "default 32",
             "batch_size": "stories per generate call (default 16)", "limit": "first N stories (default all)"})
