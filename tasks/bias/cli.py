"""The stages of `megazoo task bias ...`: the verbs of tasks/cli.py VERBS, plus the extra below. No
training stage: the task prompts a pretrained decoder (few-shot exemplars), so it has no builder."""

PROMPTING_ONLY = True

STAGES: dict[str, tuple[str, str]] = {
    "data": ("megazoo.tasks.bias.cli_data", "write the hand-written SBIC-format set (support, dev, test): data OUT_DIR "
                                            "[--seed N]"),
    "evaluate": ("megazoo.tasks.bias.cli_evaluate", "few-shot social-bias detection, ROC-AUC of p(Yes): evaluate "
                                                     "--data TEST.csv --support TRAIN.csv --checkpoint CKPT --out FILE.json "
                                                     "[--category offensive] [--shots 8] [--selection knn|random|fixed]"),
    "study": ("megazoo.tasks.bias.cli_study", "AUC against support-repository size and shots, with a PNG: study "
                                               "--data TEST.csv --support TRAIN.csv --checkpoint CKPT --out FILE.json "
                                               "[--sizes 16,32,64,100,all] [--shots 2,4,8]"),
}

# stages that are none of data / train / evaluate / sample
EXTRAS = {"study": "the paper's repository-size ablation: AUC with its bootstrap interval for each support size "
                   "and number of shots, plotted to FILE.png; a sweep of many evaluations, not one evaluation's "
                   "metrics and predictions"}

# older stage names, still accepted (the dispatcher prints a one-line note)
ALIASES = {"generate": "data"}
