"""The stages of `megazoo task race ...`: the verbs of tasks/cli.py VERBS, plus the extra below.

The training stage is a table row (core/train/stages.py recipe_stage): `megazoo train RECIPE` with
the recipe's task checked to be race."""

from megazoo.core.train.stages import recipe_stage

STAGES: dict[str, object] = {
    "data": ("megazoo.tasks.race.cli_data", "write a RACE-format set generated from the embedded corpus: data "
                                            "OUT_DIR [--seed N]"),
    "train": recipe_stage("race", "fine-tune BERT with the multiple-choice head: train RECIPE [--set k=v ...] "
                                  "[--nproc N]", set_example="train.epochs=1 parallel.tp=2"),
    "evaluate": ("megazoo.tasks.race.cli_evaluate", "accuracy (overall, middle, high) of a checkpoint: evaluate "
                                                     "--data DIR --checkpoint CKPT --out FILE.json"),
    "ensemble": ("megazoo.tasks.race.cli_ensemble", "average the softmaxes of several evaluations: ensemble "
                                                     "EVAL.json EVAL.json ... [--out FILE.json]"),
}

# stages that are none of data / train / evaluate / sample
EXTRAS = {"ensemble": "average the softmaxes of several `evaluate` outputs question by question and score the "
                      "argmax (Megatron's ensemble_classifier): it combines evaluations already written, reading "
                      "no model and no data set"}

# older stage names, still accepted (the dispatcher prints a one-line note)
ALIASES = {"finetune": "train", "generate": "data"}
