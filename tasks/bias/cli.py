"""The stages of `megazoo task bias ...`: the verbs of tasks/cli.py VERBS, plus the extra below.

The paper's method needs no training (few-shot prompts to a pretrained decoder); `train` fine-tunes
its baseline, a BERT classifier on the support set, on the core trainer (a table row:
core/train/stages.py recipe_stage, the recipe's task checked to be bias; builder.py), and
`evaluate` scores a test CSV with either (a decoder's prompts, or the fine-tuned classifier)."""

from megazoo.core.train.stages import recipe_stage

STAGES: dict[str, object] = {
    "data": ("megazoo.tasks.bias.cli_data", "write the hand-written SBIC-format set (support, dev, test): data OUT_DIR "
                                            "[--seed N]"),
    "train": recipe_stage("bias", "fine-tune the baseline, a BERT classifier on the support set: train RECIPE "
                                  "[--set k=v ...] [--nproc N]", recipe="bias-classifier",
                          set_example="data.path=runs/bias/data train.init_from=runs/bias/minilm"),
    "evaluate": ("megazoo.tasks.bias.cli_evaluate", "few-shot social-bias detection, ROC-AUC of p(Yes): evaluate "
                                                     "--data TEST.csv --support TRAIN.csv --checkpoint CKPT --out FILE.json "
                                                     "[--category offensive] [--shots 8] [--selection knn|random|fixed]; "
                                                     "or of a fine-tuned classifier: --checkpoint RUN (no --support)"),
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
