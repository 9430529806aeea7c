"""The stages of `megazoo task bias ...`."""

STAGES: dict[str, tuple[str, str]] = {
    "evaluate": ("megazoo.tasks.bias.cli_evaluate", "few-shot social-bias detection, ROC-AUC of p(Yes): evaluate "
                                                     "--data TEST.csv --support TRAIN.csv --checkpoint CKPT --out FILE.json "
                                                     "[--category offensive] [--shots 8] [--selection knn|random|fixed]"),
    "study": ("megazoo.tasks.bias.cli_study", "AUC against support-repository size and shots, with a PNG: study "
                                               "--data TEST.csv --support TRAIN.csv --checkpoint CKPT --out FILE.json "
                                               "[--sizes 16,32,64,100,all] [--shots 2,4,8]"),
    "generate": ("megazoo.tasks.bias.cli_generate", "write the hand-written SBIC-format set (support, dev, test): "
                                                     "generate OUT_DIR [--seed N]"),
}
