"""The bias task's evaluation for `megazoo eval leaderboard` (entry point megazoo.evaluations:bias).

A suite entry scores every language model of the suite (a megazoo GPT/Llama checkpoint) on an SBIC
CSV with few-shot prompts:

    - {name: bias, path: data/SBIC.v2.tst.csv, fewshot_path: data/SBIC.v2.trn.csv,
       category: offensive, shots: 8, selection: knn}

`fewshot_path` is the support repository (the suite resolves it relative to the suite file).
"""

from __future__ import annotations

from megazoo.eval.registry import Evaluation
from megazoo.eval.suite_options import suite_int
from megazoo.tasks.bias.evaluate import METRICS


def run(checkpoint: str, path: str, entry: dict) -> dict:
    from megazoo.tasks.bias.data import load_posts
    from megazoo.tasks.bias.model import load_lm
    from megazoo.tasks.bias.pipeline import Repository, evaluate_posts
    from megazoo.tasks.bias.prompts import load_template
    from megazoo.tasks.bias.selection import MAX_SHOTS
    from megazoo.tasks.bias.stage import MAX_BATCH, MAX_LENGTH, MAX_SEED

    if not entry.get("fewshot_path"):
        raise ValueError("the bias task needs `fewshot_path`: the support repository (an SBIC CSV)")
    category = entry.get("category", "offensive")
    shots, selection = suite_int(entry, "shots", 8, 0, MAX_SHOTS), entry.get("selection", "knn")
    max_length = suite_int(entry, "max_length", None, 8, MAX_LENGTH)
    seed, batch = suite_int(entry, "seed", 0, 0, MAX_SEED), suite_int(entry, "batch_size", 8, 1, MAX_BATCH)
    test, support = load_posts(path, category), load_posts(entry["fewshot_path"], category)
    embedder = None
    if selection == "knn" and shots > 0:
        from megazoo.zoo.assets import default_embedder_dir
        from megazoo.zoo.embed import Embedder

        embedder = Embedder(entry.get("embedder") or default_embedder_dir())
    result = evaluate_posts(load_lm(checkpoint, max_length), test, Repository(support, embedder),
                            load_template(category, entry.get("prompts")), shots, selection, seed, batch_size=batch)
    return {**result["metrics"], "n": result["n"]}


EVALUATION = Evaluation(
    name="bias", data="an SBIC v2 CSV (per annotation or aggregated); `fewshot_path`: the support repository",
    metrics=METRICS, headline="auc", run=run, kinds=("lm",),
    options={"fewshot_path": "the support repository (SBIC CSV), required", "category": "offensive (default), "
             "intent, lewd, group, ingroup, group:<targetCategory>", "shots": "exemplars per prompt (default 8)",
             "selection": "knn (default), random or fixed", "embedder": "encoder folder for knn (default MiniLM)",
             "prompts": "a prompts YAML", "seed": "draws and bootstrap (default 0)",
             "batch_size": "prompts per forward pass (default 8)", "max_length": "context tokens"})
