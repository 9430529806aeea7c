"""SQuAD exact match and F1 (official v1.1/v2.0 normalisation) as an ``evaluate`` metric.

Calls megazoo.eval.metrics.squad_scores.
"""
import datasets
import evaluate

from megazoo.eval.metrics import squad_scores

_DESCRIPTION = "SQuAD exact match and token F1, max over gold answers, on the 0-100 scale."
_KWARGS = """
Args:
    predictions: predicted answer strings.
    references: per question, the gold answer texts (empty = unanswerable with squad_v2=True).
    squad_v2: follow evaluate-v2.0.py for empty answers (default False).
Returns:
    exact_match, f1: floats in [0, 100].
"""


class Squad(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Rajpurkar et al. 2016, SQuAD: 100,000+ Questions for Machine Comprehension of Text.",
            inputs_description=_KWARGS,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("string"),
                    "references": datasets.Sequence(datasets.Value("string")),
                }
            ),
        )

    def _compute(self, predictions, references, squad_v2=False):
        return squad_scores(predictions, references, squad_v2=squad_v2)
