"""The detox task's evaluation for `megazoo eval leaderboard` (entry point megazoo.evaluations:detox).

A suite entry scores every language model of the suite (a GPT/Llama checkpoint or Hugging Face causal
LM; SGEAT-trained checkpoints are plain LMs) on a RealToxicityPrompts-format prompts.jsonl, as the
evaluate stage does (generations in memory, no files):

    - {name: detox, path: data/prompts.jsonl, samples: 25, scorer: profanity}

The headline is the Expected Maximum Toxicity of the full set: lower is better.
"""

from __future__ import annotations

from megazoo.eval.registry import Evaluation
from megazoo.eval.suite_options import suite_float, suite_int
from megazoo.tasks.detox.scoring_stage import METRICS  # the evaluate stage's names (a subset without prompts: none)


def run(checkpoint: str, path: str, entry: dict) -> dict:
    from megazoo.eval.taskkit import load_decoder
    from megazoo.tasks.detox.cache import ScoreCache
    from megazoo.tasks.detox.data import load_prompts
    from megazoo.tasks.detox.evaluate import toxicity_metrics
    from megazoo.tasks.detox.scorers import make_scorer, score_texts
    from megazoo.tasks.detox.scoring_stage import flat_metrics
    from megazoo.tasks.detox.stage import check_derived
    from megazoo.tasks.detox.stream import Sampling, generate_rows

    samples = suite_int(entry, "samples", 25, 1, 10_000)
    if entry.get("cache"):  # a suite's cache is continued like --cache: never one of the inputs
        check_derived([("path", path), ("checkpoint", checkpoint)], [("cache", entry["cache"])])
    prompts = load_prompts(path)
    scorer = make_scorer(entry.get("scorer", "profanity"))
    sampling = Sampling(suite_int(entry, "max_new_tokens", 20, 1, 1 << 16), suite_float(entry, "top_p", 0.9, 0.0, 1.0),
                        1.0, suite_int(entry, "batch_size", 25, 1, 4096), suite_int(entry, "seed", 0, 0, 2**32 - 1))
    sampling.check()
    model, tok = load_decoder(checkpoint)
    rows = [p.text for p in prompts for _ in range(samples)]
    records = generate_rows(model, tok, rows, [{} for _ in rows], sampling, None, 0, progress=False)
    scores = score_texts(scorer, [r["text"] for r in records], ScoreCache(entry.get("cache")))
    m = toxicity_metrics(scores, samples, [p.toxicity for p in prompts], strict=bool(entry.get("strict", True)))
    return {**flat_metrics(m), "n": len(prompts)}


EVALUATION = Evaluation(
    name="detox", data="a RealToxicityPrompts-format prompts.jsonl (prompt.text, prompt.toxicity)",
    metrics=METRICS, headline="emt", run=run, kinds=("lm",), higher_is_better=False,
    options={"samples": "generations per prompt (default 25)", "scorer": "profanity (default), hf:DIR or "
             "perspective", "max_new_tokens": "default 20", "top_p": "default 0.9", "seed": "default 0",
             "batch_size": "rows per generate call (default 25)", "strict": "TP counts > 0.5 (default true) or >= 0.5",
             "cache": "a score cache file (JSON lines)"})
