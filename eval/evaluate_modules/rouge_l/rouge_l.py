"""ROUGE-L (rouge-score) as an ``evaluate`` metric: megazoo.eval.metrics.rouge_l."""
import datasets
import evaluate

from megazoo.eval.metrics import rouge_l

_DESCRIPTION = "Mean rouge-score rougeL precision, recall and F-measure over pairs."
_KWARGS = """
Args:
    predictions: generated strings.
    references: one reference string, or a list of references, per prediction.
    use_stemmer: Porter stemming in rouge-score (default False).
Returns:
    precision, recall, fmeasure: floats in [0, 1].
"""


class RougeL(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Lin 2004, ROUGE: A Package for Automatic Evaluation of Summaries.",
            inputs_description=_KWARGS,
            features=[
                datasets.Features(
                    {
                        "predictions": datasets.Value("string"),
                        "references": datasets.Sequence(datasets.Value("string")),
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

    def _compute(self, predictions, references, use_stemmer=False):
        return rouge_l(predictions, references, use_stemmer=use_stemmer)
