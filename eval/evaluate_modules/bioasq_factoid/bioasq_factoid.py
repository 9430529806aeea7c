"""BioASQ factoid strict/lenient accuracy and MRR as an ``evaluate`` metric.

Calls megazoo.eval.metrics.bioasq_factoid_scores (BioASQ Task B factoid measures, top 5).
"""
import datasets
import evaluate

from megazoo.eval.metrics import bioasq_factoid_scores

_DESCRIPTION = "BioASQ factoid strict accuracy, lenient accuracy and MRR over the top 5 candidates."
_KWARGS = """
Args:
    predictions: per question, the ranked candidate answers.
    references: per question, the gold synonyms (flat list).
    top_k: candidates that count (default 5).
Returns:
    strict_accuracy, lenient_accuracy, mrr: floats in [0, 1].
"""


class BioasqFactoid(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=(
                "Tsatsaronis et al. 2015, An overview of the BIOASQ large-scale biomedical "
                "semantic indexing and question answering competition."
            ),
            inputs_description=_KWARGS,
            features=datasets.Features(
                {
                    "predictions": datasets.Sequence(datasets.Value("string")),
                    "references": datasets.Sequence(datasets.Value("string")),
                }
            ),
        )

    def _compute(self, predictions, references, top_k=5):
        return bioasq_factoid_scores(predictions, references, top_k=top_k)
