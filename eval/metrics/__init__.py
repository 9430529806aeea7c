"""Evaluation metrics as plain functions, each defined as its paper or official script defines it.

Scales: fractions in [0, 1], except SQuAD EM/F1 and BLEU, which keep their official 0-100 scale.
The same metrics are offered as Hugging Face ``evaluate`` modules in ``megazoo.eval.evaluate_modules``.
"""
from megazoo.eval.metrics.classification import (
    CHEMPROT_CLASSES,
    accuracy,
    chemprot_scores,
    micro_prf,
    roc_auc,
)
from megazoo.eval.metrics.dialogue import (
    knowledge_f1_scores,
    parlai_normalize,
    unigram_f1_scores,
    unigram_prf,
)
from megazoo.eval.metrics.generation import bleu, distinct_n, meteor, ngrams, repeat_n, rouge_l
from megazoo.eval.metrics.ner import get_entities, ner_scores
from megazoo.eval.metrics.perplexity import (
    Window,
    adjusted_perplexity,
    original_token_count,
    perplexity,
    plan_windows,
)
from megazoo.eval.metrics.qa import (
    bioasq_factoid_scores,
    squad_exact_match,
    squad_f1,
    squad_normalize,
    squad_scores,
)
from megazoo.eval.metrics.retrieval import (
    dpr_tokenize,
    has_answer,
    retrieval_top_k_accuracy,
    top_k_accuracy,
)
from megazoo.eval.metrics.toxicity import group_scores, toxicity_scores

__all__ = [
    "CHEMPROT_CLASSES", "accuracy", "chemprot_scores", "micro_prf", "roc_auc",
    "knowledge_f1_scores", "parlai_normalize", "unigram_f1_scores", "unigram_prf",
    "bleu", "distinct_n", "meteor", "ngrams", "repeat_n", "rouge_l",
    "get_entities", "ner_scores",
    "Window", "adjusted_perplexity", "original_token_count", "perplexity", "plan_windows",
    "bioasq_factoid_scores", "squad_exact_match", "squad_f1", "squad_normalize", "squad_scores",
    "dpr_tokenize", "has_answer", "retrieval_top_k_accuracy", "top_k_accuracy",
    "group_scores", "toxicity_scores",
]
