"""The stages of `megazoo task biomed ...`."""

STAGES: dict[str, tuple[str, str]] = {
    "finetune": ("megazoo.tasks.biomed.cli_finetune", "fine-tune BERT for NER, relations or QA: finetune RECIPE "
                                                       "(biomed-ner, biomed-re, biomed-qa) [--set k=v ...] [--nproc N]"),
    "evaluate": ("megazoo.tasks.biomed.cli_evaluate", "the paper's metrics of a checkpoint: evaluate --kind ner|re|qa "
                                                       "--data FILE --checkpoint CKPT --out FILE.json"),
    "generate": ("megazoo.tasks.biomed.cli_generate", "write NER, ChemProt and BioASQ-format sets from offline "
                                                       "material: generate OUT_DIR [--seed N]"),
    "vocab-report": ("megazoo.tasks.biomed.cli_vocab_report", "compare vocabularies on a term list (subwords per "
                                                               "term, share kept whole): vocab-report --vocab A --vocab B "
                                                               "--terms FILE --out DIR"),
}
