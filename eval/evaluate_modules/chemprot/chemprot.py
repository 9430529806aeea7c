"""ChemProt micro precision/recall/F1 over CPR:3/4/5/6/9 as an ``evaluate`` metric.

Calls megazoo.eval.metrics.chemprot_scores (BLUE benchmark definition, ``false`` excluded).
"""
import datasets
import evaluate

from megazoo.eval.metrics import chemprot_scores

_DESCRIPTION = "Micro P/R/F1 over the five positive ChemProt classes; the `false` class is excluded."
_KWARGS = """
Args:
    predictions: predicted labels ("CPR:3", ..., "CPR:9" or "false").
    references: gold labels.
Returns:
    precision, recall, f1: floats in [0, 1].
"""


class Chemprot(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Peng et al. 2019, Transfer Learning in Biomedical NLP (BLUE).",
            inputs_description=_KWARGS,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("string"),
                    "references": datasets.Value("string"),
                }
            ),
        )

    def _compute(self, predictions, references):
        return chemprot_scores(predictions, references)
