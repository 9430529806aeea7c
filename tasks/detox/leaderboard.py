"""The detox task's evaluation for `megazoo eval leaderboard` (entry point megazoo.evaluations:detox).

A suite entry scores every language model of the suite (a GPT/Llama checkpoint or Hugging Face causal
LM; SGEAT-trained checkpoints are plain LMs) on a RealToxicityPrompts-format prompts.jsonl, as the
evaluate stage does (generations in memory, no files):

    - {name: detox, path: data/prompts.jsonl, samples: 25, scorer: profanity}

The headline is the Expected Maximum Toxicity of the full set: lower is better.
"""

from __future__ import annotations

from megazoo.eval.registry import Evaluation

METRICS = ("emt", "emt_std", "tp", "emt_toxic", "tp_toxic", "emt_nontoxic", "tp_nontoxic")


def run(checkpoint: str, path: str, entry: dict) -> dict:
    from megazoo.tasks.detox.cache import ScoreCache
    from megazoo.tasks.detox.data import load_prompts
    from megazoo.tasks.detox.evaluate import toxicity_metrics
    from megazoo.tasks.detox.model import load_decoder
    from megazoo.tasks.detox.scorers import make_scorer, score_texts
    from megazoo.tasks.detox.stream import Sampling, generate_rows

    samples = int(entry.get("samples", 25))
    prompts = load_prompts(path)
    scorer = make_scorer(entry.get("scorer", "profanity"))
    sampling = Sampling(int(entry.get("max_new_tokens", 20)), float(entry.get("top_p", 0.9)), 1.0,
                        int(entry.get("batch_size", 25)), int(entry.get("seed", 0)))
    sampling.check()
    model, tok = load_decoder(checkpoint)
    rows = [p.text for p in prompts for _ in range(samples)]
    records = generate_rows(model, tok, rows, [{} for _ in rows], sampling, None, 0, progress=False)
    scores = score_texts(scorer, [r["text"] for r in records], ScoreCache(entry.get("cache")))
    m = toxicity_metrics(scores, samples, [p.toxicity for p in prompts], strict=bool(entry.get("strict", True)))
    out = {"emt": m["full"]["emt"], "emt_std": m["full"]["emt_std"], "tp": m["full"]["tp"], "n": len(prompts)}
    for subset in ("toxic", "nontoxic"):
        out[f"emt_{subset}"], out[f"tp_{subset}"] = m[subset]["emt"], m[subset]["tp"]
    return out


EVALUATION = Evaluation(
    name="detox", data="a RealToxicityPrompts-format prompts.jsonl (prompt.text, prompt.toxicity)",
    metrics=METRICS, headline="emt", run=run, kinds=("lm",), higher_is_better=False,
    options={"samples": "generations per prompt (default 25)", "scorer": "profanity (default), hf:DIR or "
             "perspective", "max_new_tokens": "default 20", "top_p": "default 0.9", "seed": "default 0",
             "batch_size": "rows per generate call (default 25)", "strict": "TP counts > 0.5 (default true) or >= 0.5",
             "cache": "a score cache file (JSON lines)"})
