"""RACE reading comprehension on BERT (the Megatron-BERT leaderboard result), on the core trainer.

    from megazoo.tasks.race import load_race, build_inputs, generate_race
    questions = load_race("RACE", "dev")          # original layout or HF `race` parquet/JSON
    batch = build_inputs(questions, tokenizer)    # [CLS] qa [SEP] article [SEP], 4 rows per question
    generate_race("out/RACE", seed=0)             # a RACE-format set from the embedded corpus

Training is a recipe for the core trainer (`task: race`, megazoo.tasks.race.builder); the stages
are `megazoo task race data|train|evaluate|ensemble ...` (see megazoo.tasks.race.cli).
"""

from megazoo.tasks.race.data import RaceFormatError, RaceQuestion, load_race, read_hf_race, read_race_dir
from megazoo.tasks.race.evaluate import ensemble, predictions_record, race_accuracy
from megazoo.tasks.race.generate import generate_race
from megazoo.tasks.race.inputs import build_inputs, clean_text

__all__ = ["RaceFormatError", "RaceQuestion", "build_inputs", "clean_text", "ensemble",
           "evaluate_checkpoint", "generate_race", "load_race", "predictions_record", "race_accuracy",
           "read_hf_race", "read_race_dir"]


def __getattr__(name):  # the evaluate stage imports torch-heavy modules: load it on first use
    if name == "evaluate_checkpoint":
        from megazoo.tasks.race.evaluate_stage import evaluate_checkpoint

        return evaluate_checkpoint
    raise AttributeError(f"module 'megazoo.tasks.race' has no attribute {name!r}")
