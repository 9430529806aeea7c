"""The stages of `megazoo task story ...` (MEGATRON-CNTRL: data, weak labels, training of the three
components, the generation loop, metrics)."""

STAGES: dict[str, tuple[str, str]] = {
    "data": ("megazoo.tasks.story.cli_data", "write a ROCStories-format set (generated offline, or split from "
                                             "--rocstories FILE.csv 90/5/5), the hand-written eval set, gold keywords "
                                             "and a WordNet knowledge base: data OUT_DIR [--stories 600] [--seed N]"),
    "label": ("megazoo.tasks.story.cli_label", "the ranker's weak labels (MiniLM similarity to the gold sentence): "
                                               "label --data DIR --knowledge FILE --embedder DIR --out DIR"),
    "train": ("megazoo.tasks.story.cli_train", "train a component: train RECIPE --set task.component="
                                               "keywords|ranker|generator [--set k=v ...] [--nproc N]"),
    "generate": ("megazoo.tasks.story.cli_generate", "write sentences 2-5 of every story: generate --checkpoint DIR "
                                                     "--data FILE.csv [--keywords FILE] [--antonyms] --out FILE.jsonl"),
    "evaluate": ("megazoo.tasks.story.cli_evaluate", "Repeat-4, Distinct-4, control rate and perplexity: evaluate "
                                                     "--data FILE.csv --generations FILE.jsonl [--checkpoint DIR] "
                                                     "--out FILE.json"),
}
