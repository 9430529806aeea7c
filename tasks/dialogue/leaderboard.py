"""The dialogue task's evaluation for `megazoo eval leaderboard` (entry point megazoo.evaluations:dialogue).

A suite entry scores every language model of the suite (dialogue fine-tunes are plain LMs) with MSDP's
two stages on a flattened dialogue file (the TSV, a WoW .json, ...), as `msdp --selection simple`
then `evaluate` do, in memory (the entry picks prompt examples with MiniLM, not Megatron's selection):

    - {name: dialogue, path: data/wow/test_random_split.tsv, examples: data/wow/train.tsv, limit: 20}

The headline is the knowledge F1 (KF1) of the responses; `knowledge_f1` is stage 1's F1 against the
gold knowledge.
"""

from __future__ import annotations

from megazoo.eval.registry import Evaluation
from megazoo.eval.suite_options import suite_int

METRICS = ("kf1", "f1", "bleu", "rouge_l", "meteor", "knowledge_f1")


def run(checkpoint: str, path: str, entry: dict) -> dict:
    from pathlib import Path

    from megazoo.tasks.dialogue import msdp
    from megazoo.tasks.dialogue.data import read_any
    from megazoo.eval.taskkit import load_decoder
    from megazoo.tasks.dialogue.decode import greedy_lines
    from megazoo.tasks.dialogue.evaluate import dialogue_metrics
    from megazoo.eval.metrics import unigram_f1_scores
    from megazoo.tasks.dialogue.stage import MAX_BATCH, MAX_ITEMS, MAX_NEW_TOKENS, MAX_SEED
    from megazoo.zoo.assets import default_embedder_dir
    from megazoo.zoo.embed import Embedder

    limit = suite_int(entry, "limit", None, 1, MAX_ITEMS)
    new = suite_int(entry, "max_new_tokens", 64, 1, MAX_NEW_TOKENS)
    batch, seed = suite_int(entry, "batch_size", 4, 1, MAX_BATCH), suite_int(entry, "seed", 0, 0, MAX_SEED)
    samples = msdp.grounded(read_any(path))[:limit]
    pool = read_any(entry.get("examples") or Path(path).parent / "train.tsv")
    emb = Embedder(entry.get("embedder") or default_embedder_dir())
    prompts = msdp.knowledge_prompts(samples, pool, lambda t: emb.encode(list(t), pooling="mean", normalize=True))
    model, tok = load_decoder(checkpoint, use="dialogue generation")
    knowledge = greedy_lines(model, tok, prompts, new, batch)
    examples = msdp.response_examples(pool, msdp.RESPONSE_SHOTS, seed)
    responses = greedy_lines(model, tok, msdp.response_prompts(samples, knowledge, examples), new, batch)
    out = dict(dialogue_metrics(responses, samples)["metrics"])
    out["knowledge_f1"] = unigram_f1_scores(knowledge, [s.knowledge for s in samples])["f1"]
    out["n"] = len(samples)
    return out


EVALUATION = Evaluation(
    name="dialogue", data="a flattened dialogue TSV (topic, turns, knowledge, response) or WoW/WoI/conversation "
    "file; MSDP prompting", metrics=METRICS, headline="kf1", run=run, kinds=("lm",),
    options={"examples": "the training samples the prompts' examples come from (default train.tsv beside path)",
             "limit": "only the first N samples with knowledge", "embedder": "sentence encoder for example "
             "selection (default all-MiniLM-L6-v2)", "max_new_tokens": "default 64", "batch_size": "default 4",
             "seed": "order of the 20 fixed response examples (default 0)"})
