"""The names of megazoo's zero-shot tasks that lm-eval also has under another protocol (issue 41).

megazoo's RACE and WikiText evaluations differ by design from lm-eval's `race` and `wikitext`
(docs/eval.md, "megazoo's zero-shot tasks and lm-eval's"), so they carry names of their own and one
name never stands for two numbers:

  race_gpt3             GPT-3's RACE: every question of an article scored on its own, plus
                        acc_calibrated (lm-eval's `race`: one example per article, the earlier
                        questions answered in the prompt, only the last one scored)
  wikitext103_megatron  Megatron's WikiText-103: the detokenised test file as one token stream,
                        overlapping windows (stride 32), adjusted_ppl by word count (lm-eval's
                        `wikitext`: WikiText-2 per document, disjoint rolling windows)

The old names are refused in one line naming the new one (`renamed_message`), and results files
written before the rename are read with the new names (`current_name`). No torch here: the
leaderboard's suite checks import this before any model is loaded.
"""

from __future__ import annotations

RACE = "race_gpt3"
WIKITEXT = "wikitext103_megatron"

# old name -> (new name, its protocol in words, a metric only the old zero-shot task's results hold)
RENAMED = {
    "race": (RACE, "GPT-3's RACE protocol: every question scored on its own, plus acc_calibrated", "acc"),
    "wikitext": (WIKITEXT, "Megatron's WikiText-103 protocol: one token stream, overlapping windows, adjusted_ppl",
                 "adjusted_ppl"),
}


def renamed_message(name: str) -> str | None:
    """The one-line refusal of an old task name, or None for any other name."""
    if name not in RENAMED:
        return None
    new, protocol, _ = RENAMED[name]
    return (f"task {name!r} is now {new!r} ({protocol}; docs/eval.md); lm-eval's {name!r} is another evaluation: "
            f"run it with `megazoo eval lm-eval --model megazoo --model_args pretrained=DIR --tasks {name}`")


def current_name(task: str, metrics: dict) -> str:
    """A task name read from a results file, as the task is called now: an old zero-shot name whose
    results hold the old task's metric gets its new name; anything else keeps its name (RACE's
    fine-tuned evaluation is `race` too, and its results hold `accuracy`, not `acc`)."""
    new, _, metric = RENAMED.get(task, (task, None, None))
    return new if metric is not None and metric in metrics else task
