"""ParlAI unigram F1 (and knowledge F1) as an ``evaluate`` metric.

Calls megazoo.eval.metrics.unigram_f1_scores (ParlAI F1Metric as in Megatron-LM tasks/msdp).
For KF1 pass the gold knowledge sentences as references.
"""
import datasets
import evaluate

from megazoo.eval.metrics import unigram_f1_scores

_DESCRIPTION = "ParlAI unigram F1; pairs with an empty reference (or no_passages_used) are skipped."
_KWARGS = """
Args:
    predictions: generated responses.
    references: gold responses (F1) or gold knowledge (KF1).
Returns:
    precision, recall, f1: means in [0, 1]; count: pairs scored.
"""


class DialogueF1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=(
                "Miller et al. 2017, ParlAI; Liu et al. 2022, Multi-Stage Prompting for "
                "Knowledgeable Dialogue Generation."
            ),
            inputs_description=_KWARGS,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("string"),
                    "references": datasets.Value("string"),
                }
            ),
        )

    def _compute(self, predictions, references):
        return unigram_f1_scores(predictions, references)
