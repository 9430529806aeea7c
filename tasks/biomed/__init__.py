"""BioMegatron (Shin et al. 2020) on the core trainer: a biomedical vocabulary, domain BERT
pretraining, and NER, relation extraction and QA fine-tuning with their exact metrics.

    from megazoo.tasks.biomed import read_ner_tsv, read_chemprot_tsv, read_squad_json
    sentences = read_ner_tsv("BC5CDR-chem/test.tsv")     # BioBERT NER TSV
    relations = read_chemprot_tsv("ChemProt/dev.tsv")     # BLUE ChemProt
    questions = read_squad_json("BioASQ/train.json")      # BioASQ factoid, SQuAD-v1.1 JSON

Training is a recipe for the core trainer (`task: biomed`, `task.kind: ner|re|qa`,
megazoo.tasks.biomed.builder); the stages are `megazoo task biomed data|vocab-report|train|
evaluate ...` (megazoo.tasks.biomed.cli).
"""

from megazoo.tasks.biomed.data import (CHEMPROT_LABELS, BiomedFormatError, NerSentence, QAQuestion, Relation,
                                       read_chemprot_tsv, read_ner_tsv, read_split, read_squad_json)
from megazoo.tasks.biomed.evaluate import ner_metrics, qa_metrics, re_metrics

__all__ = ["CHEMPROT_LABELS", "BiomedFormatError", "NerSentence", "QAQuestion", "Relation", "ner_metrics",
           "qa_metrics", "re_metrics", "read_chemprot_tsv", "read_ner_tsv", "read_split", "read_squad_json"]
