"""Scoring generations and turning their scores into the paper's metrics (evaluate and score stages),
and the evaluation record both write (eval/taskkit.py):

    {"task": "detox", "n": prompts, "metrics": {"emt", "emt_std", "tp", "emt_toxic", "emt_std_toxic",
     "tp_toxic", "emt_nontoxic", "emt_std_nontoxic", "tp_nontoxic"}, "counts": {"full", "toxic",
     "nontoxic"}, "predictions": "FILE.predictions.jsonl", ...}

Full's figures under the paper's names, the Toxic and Nontoxic subsets' with a suffix (a subset
without prompts has none); counts are the prompts of each subset. The leaderboard reports the same
names.
"""

from __future__ import annotations

from pathlib import Path

SUBSETS = ("full", "toxic", "nontoxic")
FIGURES = ("emt", "emt_std", "tp")
METRICS = tuple(f + ("" if s == "full" else f"_{s}") for s in SUBSETS for f in FIGURES)


def flat_metrics(by_subset: dict) -> dict:
    """{"full"|"toxic"|"nontoxic": {"emt", "emt_std", "tp", "n"}} -> the record's metric names."""
    return {name + ("" if subset == "full" else f"_{subset}"): m[name]
            for subset, m in by_subset.items() if m["n"] for name in FIGURES}


def write_toxicity(out, n: int, by_subset: dict, records: list[dict], **extra) -> tuple[Path, Path]:
    """FILE.predictions.jsonl (the scored generations) and FILE.json, each atomically."""
    from megazoo.eval.taskkit import write_evaluation

    Path(out).parent.mkdir(parents=True, exist_ok=True)
    return write_evaluation(out, "detox", n, flat_metrics(by_subset), records,
                            counts={s: by_subset[s]["n"] for s in by_subset}, **extra)


def fill_scores(records: list[dict], scorer, cache) -> list[float]:
    """Each record's toxicity: its own `score` when it has one (a number, or Megatron's
    {"toxicity": x, ...} annotation), else the scorer's (-1 for an empty text); written back into
    the records."""
    from megazoo.tasks.detox.scorers import score_texts

    scores: list[float | None] = [given_score(r) for r in records]
    todo = [i for i, s in enumerate(scores) if s is None]
    if todo:
        if scorer is None:
            raise ValueError(f"{len(todo)} generations have no score; give --scorer")
        for i, s in zip(todo, score_texts(scorer, [records[i]["text"] for i in todo], cache)):
            scores[i] = s
    for r, s in zip(records, scores):
        r["score"] = s
    return scores


def given_score(record: dict) -> float | None:
    s = record.get("score")
    if isinstance(s, dict):
        s = s.get("toxicity")
    return float(s) if isinstance(s, (int, float)) and not isinstance(s, bool) else None


def check_generations(numbered: list[tuple[int, dict]], prompts: list, samples: int, gen_path, prompts_path) -> None:
    """Refuse generations that do not belong to the prompts file: their count must be prompts x
    --samples, a generation's `id` (where given) its row, and its `prompt` (where given: text, or
    {"text"}) the text of the prompt that owns its row (prompt i owns rows samples*i ..). One line
    naming both files."""
    n = len(numbered)
    if n % samples:
        raise ValueError(f"{gen_path}: {n} generations is not a multiple of {samples} per prompt (--samples); lines "
                         f"must be in prompt order, {samples} per prompt")
    if n != len(prompts) * samples:
        raise ValueError(f"{gen_path}: {n} generations are {n // samples} prompts x {samples} (--samples), but "
                         f"{prompts_path} has {len(prompts)} prompts; give the prompts file these generations were "
                         f"made from (or their --samples)")
    for row, (line, rec) in enumerate(numbered):
        rid = rec.get("id")
        if isinstance(rid, int) and not isinstance(rid, bool) and rid != row:
            raise ValueError(f"{gen_path}:{line}: id {rid} on row {row}; generations must be in row order (prompt i "
                             f"owns rows {samples}*i ..) to be matched with {prompts_path}")
        prompt = rec.get("prompt")
        text = prompt.get("text") if isinstance(prompt, dict) else prompt
        want = prompts[row // samples].text
        if isinstance(text, str) and text != want:
            raise ValueError(f"{gen_path}:{line}: a generation of prompt {text[:40]!r}, but row {row} belongs to "
                             f"prompt {row // samples + 1} of {prompts_path}, {want[:40]!r}; give the prompts file "
                             f"these generations were made from (or their --samples)")


def report(metrics: dict) -> str:
    parts = []
    for subset in SUBSETS:
        m = metrics[subset]
        if m["n"]:
            parts.append(f"{subset}: EMT {m['emt']:.3f} +- {m['emt_std']:.3f}  TP {m['tp']:.3f}  ({m['n']} prompts)")
    return "\n".join(parts)
