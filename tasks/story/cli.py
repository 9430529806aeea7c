"""The stages of `megazoo task story ...` (MEGATRON-CNTRL: data, weak labels, training of the three
components, sampling stories with the generation loop, metrics)."""

from megazoo.core.train.stages import recipe_stage

STAGES: dict[str, object] = {
    "data": ("megazoo.tasks.story.cli_data", "write a ROCStories-format set (generated offline, or split from "
                                             "--rocstories FILE.csv 90/5/5), the hand-written eval set, gold keywords "
                                             "and a WordNet knowledge base: data OUT_DIR [--stories 600] [--seed N]"),
    "label": ("megazoo.tasks.story.cli_label", "the ranker's weak labels (MiniLM similarity to the gold sentence): "
                                               "label --data DIR --knowledge FILE --embedder DIR --out DIR"),
    "train": recipe_stage("story", "train a component: train RECIPE --set task.component=keywords|ranker|generator "
                                   "[--set k=v ...] [--nproc N]",
                          recipe="story, story-keywords, story-ranker",
                          set_example="task.component=keywords train.steps=20"),
    "sample": ("megazoo.tasks.story.cli_sample", "write sentences 2-5 of every story with the models: sample "
                                                 "--checkpoint DIR --data FILE.csv [--keywords FILE] [--antonyms] "
                                                 "--out FILE.jsonl"),
    "evaluate": ("megazoo.tasks.story.cli_evaluate", "Repeat-4, Distinct-4, control rate and perplexity: evaluate "
                                                     "--data FILE.csv --generations FILE.jsonl [--checkpoint DIR] "
                                                     "--out FILE.json"),
}

# stages that are none of data / train / evaluate / sample
EXTRAS = {"label": "the ranker's weak labels (per step, the knowledge sentence closest to the gold next sentence "
                   "under a sentence encoder) from a `data` set: labels derived with a model, not a data set in an "
                   "official format, a training run or a sample"}

# older stage names, still accepted (the dispatcher prints a one-line note)
ALIASES = {"generate": "sample"}
