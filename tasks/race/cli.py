"""The stages of `megazoo task race ...`."""

STAGES: dict[str, tuple[str, str]] = {
    "finetune": ("megazoo.tasks.race.cli_finetune", "fine-tune BERT with the multiple-choice head: finetune RECIPE "
                                                     "[--set k=v ...] [--nproc N]"),
    "evaluate": ("megazoo.tasks.race.cli_evaluate", "accuracy (overall, middle, high) of a checkpoint: evaluate "
                                                     "--data DIR --checkpoint CKPT --out FILE.json"),
    "ensemble": ("megazoo.tasks.race.cli_ensemble", "average the softmaxes of several predictions files: ensemble "
                                                     "PRED.json PRED.json ... [--out FILE.json]"),
    "generate": ("megazoo.tasks.race.cli_generate", "write a RACE-format set generated from the embedded corpus: "
                                                     "generate OUT_DIR [--seed N]"),
}
