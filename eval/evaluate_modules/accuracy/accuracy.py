"""Accuracy as an ``evaluate`` metric: megazoo.eval.metrics.accuracy (fraction of exact matches)."""
import datasets
import evaluate

from megazoo.eval.metrics import accuracy

_DESCRIPTION = "Fraction of predictions equal to their references (RACE, GLUE, MT-NLG tasks)."
_KWARGS = """
Args:
    predictions: predicted labels (ints or strings).
    references: gold labels of the same type.
Returns:
    accuracy: float in [0, 1].
"""


class Accuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="",
            inputs_description=_KWARGS,
            features=[
                datasets.Features(
                    {
                        "predictions": datasets.Value("int64"),
                        "references": datasets.Value("int64"),
                    }
                ),
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Value("string"),
                    }
                ),
            ],
        )

    def _compute(self, predictions, references):
        return {"accuracy": accuracy(predictions, references)}
