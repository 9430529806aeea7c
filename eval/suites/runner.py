"""Run one named task of the suites. The old names `race` and `wikitext` are refused in one line
naming the new ones (eval/task_names.py)."""

from __future__ import annotations

from megazoo.eval.lm import LanguageModel
from megazoo.eval.suites.fewshot import same_split
from megazoo.eval.suites.lm_tasks import LAMBADA_MODES, evaluate_lambada, evaluate_wikitext
from megazoo.eval.suites.multiple_choice import MC_TASKS, evaluate_multiple_choice, load_questions, sample_shots
from megazoo.eval.task_names import WIKITEXT, renamed_message

TASKS = ["lambada", WIKITEXT, *MC_TASKS]


def check_task_options(name: str, num_fewshot: int = 0, stride: int | None = None,
                       lambada_mode: str | None = None) -> None:
    """Refuse options a task does not have, before any model is loaded (one-line ValueErrors)."""
    if renamed_message(name):
        raise ValueError(renamed_message(name))
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")
    if num_fewshot < 0:
        raise ValueError(f"{name}: num_fewshot must be 0 or more, got {num_fewshot}")
    if name == WIKITEXT and num_fewshot > 0:
        # a perplexity over the whole test stream has no questions to put examples in front of
        raise ValueError(f"{WIKITEXT}: few-shot evaluation is not defined for WikiText perplexity; use num_fewshot 0")
    if stride is not None and name != WIKITEXT:
        raise ValueError(f"{name}: stride applies only to {WIKITEXT} (the sliding-window perplexity)")
    if stride is not None and stride < 1:
        raise ValueError(f"{WIKITEXT}: stride must be a positive number of tokens, got {stride}")
    if lambada_mode is not None:
        if name != "lambada":
            raise ValueError(f"{name}: lambada_mode applies only to lambada")
        if lambada_mode not in LAMBADA_MODES:
            raise ValueError(f"lambada: mode must be one of {', '.join(LAMBADA_MODES)}, got {lambada_mode!r}")


def run_task(lm: LanguageModel, name: str, path, num_fewshot: int = 0, fewshot_path=None, limit: int | None = None,
             batch_size: int = 8, seed: int = 1234, progress: bool = False, stride: int | None = None,
             lambada_mode: str | None = None) -> dict:
    """The task's metrics. `stride`: wikitext103_megatron's window stride (default 32); `lambada_mode`: strict
    (default) or nonstrict; few-shot examples are drawn per question, seeded by (seed, index)."""
    num_fewshot = int(num_fewshot or 0)
    check_task_options(name, num_fewshot, stride, lambada_mode)
    if name == "lambada":
        return evaluate_lambada(lm, path, batch_size, limit, progress, mode=lambada_mode or "strict",
                                num_fewshot=num_fewshot, fewshot_path=fewshot_path, seed=seed)
    if name == WIKITEXT:
        return evaluate_wikitext(lm, path, stride=stride, batch_size=batch_size, progress=progress)
    questions = load_questions(name, path, limit)
    shots = []
    if num_fewshot:
        if fewshot_path is None:
            raise ValueError(f"{name}: {num_fewshot}-shot evaluation needs a few-shot file (the task's train split)")
        # shots from the evaluated file itself never include the question being asked
        shots = sample_shots(load_questions(name, fewshot_path), num_fewshot, len(questions), seed,
                             exclude_question=same_split(path, fewshot_path))
    return {**evaluate_multiple_choice(lm, questions, shots, batch_size, progress), "num_fewshot": num_fewshot}
