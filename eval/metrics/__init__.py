"""The one implementation of every paper metric, each equal to its official script or reference.

Every task scores through these functions; none keeps a copy (tests/test_metrics_reference.py
checks each against a re-statement of its official script, or the reference library itself, on
hundreds of random cases).

Scale: every rate is a fraction in [0, 1] (accuracy, EM, F1, top-k, BLEU, ROC-AUC, EMT, TP, ...),
in return values and in the files written from them; a percentage appears only when printed
(``f"{100 * value:.1f}"``). Perplexities are plain perplexities.

Keys: the names of returned dicts are lower_snake_case words (``exact_match``, ``f1``,
``strict_accuracy``, ``has_ans_f1``); a number belongs to the word it qualifies, as the papers'
tables write it: ``top1``/``top20`` (DPR top-k), ``kf1``, ``emt``/``tp`` (the detox paper's EMT and TP).

The same metrics are ``evaluate`` modules generated from one table (``megazoo.eval.evaluate_modules``).
"""
from megazoo.eval.metrics.bioasq import bioasq_factoid_scores, first_match_rank
from megazoo.eval.metrics.classification import (
    CHEMPROT_CLASSES,
    accuracy,
    chemprot_scores,
    mann_whitney_auc,
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
from megazoo.eval.metrics.retrieval import (
    MATCHES,
    dpr_tokenize,
    has_answer,
    retrieval_top_k_accuracy,
    simple_tokenize,
    top_k_accuracy,
)
from megazoo.eval.metrics.squad import (
    squad_exact_match,
    squad_f1,
    squad_gold_answers,
    squad_normalize,
    squad_question_scores,
    squad_scores,
)
from megazoo.eval.metrics.toxicity import group_scores, toxicity_scores, toxicity_summary

__all__ = [
    "bioasq_factoid_scores", "first_match_rank",
    "CHEMPROT_CLASSES", "accuracy", "chemprot_scores", "mann_whitney_auc", "micro_prf", "roc_auc",
    "knowledge_f1_scores", "parlai_normalize", "unigram_f1_scores", "unigram_prf",
    "bleu", "distinct_n", "meteor", "ngrams", "repeat_n", "rouge_l",
    "get_entities", "ner_scores",
    "Window", "adjusted_perplexity", "original_token_count", "perplexity", "plan_windows",
    "MATCHES", "dpr_tokenize", "has_answer", "retrieval_top_k_accuracy", "simple_tokenize", "top_k_accuracy",
    "squad_exact_match", "squad_f1", "squad_gold_answers", "squad_normalize", "squad_question_scores",
    "squad_scores",
    "group_scores", "toxicity_scores", "toxicity_summary",
]
