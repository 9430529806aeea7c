"""The stages of `megazoo task biomed ...`: the verbs of tasks/cli.py VERBS, plus the extra below.

The training stage is a table row (core/train/stages.py recipe_stage): `megazoo train RECIPE` with
the recipe's task checked to be biomed (task.kind: ner, re or qa, checked by the builder)."""

from megazoo.core.train.stages import recipe_stage

STAGES: dict[str, object] = {
    "data": ("megazoo.tasks.biomed.cli_data", "write NER, ChemProt and BioASQ-format sets from offline material: "
                                              "data OUT_DIR [--seed N]"),
    "vocab-report": ("megazoo.tasks.biomed.cli_vocab_report", "compare vocabularies on a term list (subwords per "
                                                               "term, share kept whole): vocab-report --vocab A --vocab B "
                                                               "--terms FILE --out DIR"),
    "train": recipe_stage("biomed", "fine-tune BERT for NER, relations or QA: train RECIPE (biomed-ner, biomed-re, "
                                    "biomed-qa) [--set k=v ...] [--nproc N]",
                          recipe="biomed-ner, biomed-re, biomed-qa", set_example="train.epochs=1 parallel.tp=2"),
    "evaluate": ("megazoo.tasks.biomed.cli_evaluate", "the paper's metrics of a checkpoint: evaluate --kind ner|re|qa "
                                                       "--data FILE --checkpoint CKPT --out FILE.json"),
}

# stages that are none of data / train / evaluate / sample
EXTRAS = {"vocab-report": "compare tokenizer vocabularies on a list of domain terms (subwords per term, share kept "
                          "whole; table, JSON and plot): BioMegatron's vocabulary study, which measures tokenizers, "
                          "not a model"}

# older stage names, still accepted (the dispatcher prints a one-line note)
ALIASES = {"finetune": "train", "generate": "data"}
