"""Zero- and few-shot suites of the Megatron-LM and MT-NLG papers, read from official local files.

`run_task(lm, name, path, num_fewshot=0, fewshot_path=None, ...)` returns the task's metrics. Tasks:
lambada (strict whole-word or Megatron's non-strict last-token accuracy, zero-shot or GPT-3's
fill-in-the-blank few-shot), wikitext103_megatron (Megatron's adjusted perplexity, overlapping windows
with stride 32 by default; no few-shot), and the multiple-choice tasks scored by log-likelihood: boolq,
race_gpt3 (GPT-3's RACE), piqa, hellaswag, winogrande, anli, hans, wic. Few-shot examples are drawn
per question. The two tasks whose protocol differs from lm-eval's task of the old name, `race` and
`wikitext`, carry these names (eval/task_names.py; docs/eval.md).
"""

from megazoo.eval.suites.lm_tasks import evaluate_lambada, evaluate_wikitext
from megazoo.eval.suites.multiple_choice import MC_TASKS, evaluate_multiple_choice
from megazoo.eval.suites.runner import TASKS, run_task

__all__ = ["MC_TASKS", "TASKS", "evaluate_lambada", "evaluate_multiple_choice", "evaluate_wikitext", "run_task"]
