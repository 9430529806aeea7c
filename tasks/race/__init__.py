"""RACE reading comprehension on BERT (the Megatron-BERT leaderboard result), at any TP x DP layout.

    from megazoo.tasks.race import load_race, build_inputs, build_race_model, run_finetune
    questions = load_race("RACE", "dev")          # original layout or HF `race` parquet/JSON
    batch = build_inputs(questions, tokenizer)    # [CLS] qa [SEP] article [SEP], 4 rows per question
    generate_race("out/RACE", seed=0)             # a RACE-format set from the embedded corpus

Command line: `megazoo task race finetune|evaluate|ensemble|generate ...` (see megazoo.tasks.race.cli).
"""

from megazoo.tasks.race.data import RaceFormatError, RaceQuestion, load_race, read_hf_race, read_race_dir
from megazoo.tasks.race.evaluate import ensemble, predictions_record, race_accuracy
from megazoo.tasks.race.generate import generate_race
from megazoo.tasks.race.inputs import RaceBatch, build_inputs, clean_text

__all__ = ["RaceBatch", "RaceFormatError", "RaceQuestion", "build_inputs", "build_race_model", "clean_text",
           "ensemble", "evaluate_checkpoint", "generate_race", "load_race", "predictions_record", "race_accuracy",
           "read_hf_race", "read_race_dir", "run_finetune"]


def __getattr__(name):  # the model-side pieces import torch-heavy modules: load them on first use
    if name == "build_race_model":
        from megazoo.tasks.race.model import build_race_model

        return build_race_model
    if name in ("run_finetune", "evaluate_checkpoint"):
        from megazoo.tasks.race import run

        return getattr(run, name)
    raise AttributeError(f"module 'megazoo.tasks.race' has no attribute {name!r}")
