"""The stages of `megazoo task synthetic_qa ...` (each reads and writes SQuAD-format JSON): the verbs of
tasks/cli.py VERBS, plus the extras below.

The training stage is a table row (core/train/stages.py): `megazoo train RECIPE` with the recipe's task
checked. It trains the pipeline's three models: the QA model and the answer extractor (task
synthetic_qa, kind qa or answers) and the question generator (task sft, recipe synthetic_qa-qg), so
its row also takes a recipe of task sft (TrainStage)."""

from megazoo.core.train.stages import RecipeStage


class TrainStage(RecipeStage):
    """recipe_stage("synthetic_qa") that also takes the question generator's recipe (task.name: sft)."""

    def load(self, recipe, overrides=None):
        from megazoo.core.train.commands import load_task_recipe

        return load_task_recipe(recipe, overrides, ("synthetic_qa", "sft"), "synthetic_qa",
                                "the recipe's task.name is {name!r}; this stage trains synthetic_qa models "
                                "(task.name: synthetic_qa, kind qa|answers) and the question generator "
                                "(task.name: sft); run it with `megazoo task {name} train {recipe}` or "
                                "`megazoo train {recipe}`")


STAGES: dict[str, object] = {
    "data": ("megazoo.tasks.synthetic_qa.cli_data", "write the bootstrap data from the embedded corpus: data OUT_DIR "
                                                    "[--seed N] [--qg-input paragraph|sentence]"),
    "train": TrainStage("synthetic_qa", "train the QA model, the answer extractor or the question generator: train "
                                        "RECIPE [--set k=v ...] [--nproc N]",
                        recipe="synthetic_qa, synthetic_qa-answers, synthetic_qa-qg",
                        set_example="data.path=runs/synthetic_qa/kept.json parallel.tp=2"),
    "corpus": ("megazoo.tasks.synthetic_qa.cli_corpus",
               "sample the paragraphs from a decoder: corpus --model DECODER --prompts FILE --out FILE.json "
               "[--source FILE ...] [--per-prompt N] [--top-p P] [--min-words N] [--max-words N]"),
    "answers": ("megazoo.tasks.synthetic_qa.cli_answers",
                "propose answer spans per paragraph: answers --data PARAGRAPHS.json --checkpoint CKPT --out FILE.json "
                "[--top K]"),
    "sample": ("megazoo.tasks.synthetic_qa.cli_sample",
               "sample questions per answer: sample --data ANSWERS.json --checkpoint QG --out FILE.json [--samples N] "
               "[--qg-input paragraph|sentence]"),
    "filter": ("megazoo.tasks.synthetic_qa.cli_filter",
               "roundtrip filtration: filter --data QUESTIONS.json --checkpoint QA --out KEPT.json [--rejected FILE] "
               "[--match em|f1]"),
    "evaluate": ("megazoo.tasks.synthetic_qa.cli_evaluate",
                 "EM/F1 of a QA checkpoint: evaluate --data DEV.json --checkpoint CKPT --out FILE.json (predictions "
                 "{id: answer} in FILE.predictions.json)"),
    "score": ("megazoo.tasks.synthetic_qa.cli_score",
              "score a predictions file as the official scripts do: score --data DEV.json --predictions PRED.json "
              "--out FILE.json"),
}

# stages that are none of data / train / evaluate / sample
EXTRAS = {"corpus": "the synthetic corpus: paragraphs a decoder samples from titles or opening sentences, cut to "
                    "whole sentences and deduplicated against the source text and among themselves, written "
                    "in SQuAD layout without questions for the answers stage (Puri et al.'s generated "
                    "paragraphs); `sample` is taken by the questions",
          "answers": "the answer extractor's top candidate spans per paragraph (SQuAD JSON, questions left empty): "
                     "stage 1 of the synthetic data, spans a trained model picks, not sampled text nor an offline "
                     "data set",
          "filter": "roundtrip filtration: the QA model answers each generated question and the pair is kept when "
                    "its answer matches the proposed one; it prunes data with a model rather than writing, training, "
                    "evaluating or sampling",
          "score": "a predictions file {id: answer} made elsewhere scored alone as the official SQuAD scripts score "
                   "it: evaluate's metrics without a checkpoint"}

# older stage names, still accepted (the dispatcher prints a one-line note)
ALIASES = {"generate": "data", "questions": "sample"}
