"""distinct-n and repeat-n of generations as an ``evaluate`` metric.

Calls megazoo.eval.metrics.distinct_n and repeat_n (MEGATRON-CNTRL's Distinct-4 / Repeat-4).
"""
import datasets
import evaluate

from megazoo.eval.metrics import distinct_n, repeat_n

_DESCRIPTION = "distinct-n (unique / all n-grams over all generations) and repeat-n (share with a repeated n-gram)."
_KWARGS = """
Args:
    predictions: generated texts (split on whitespace).
    n: n-gram order (default 4).
Returns:
    distinct_n, repeat_n: floats in [0, 1].
"""


class Diversity(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Li et al. 2016, A Diversity-Promoting Objective Function; Xu et al. 2020, MEGATRON-CNTRL.",
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string")}),
        )

    def _compute(self, predictions, n=4):
        return {"distinct_n": distinct_n(predictions, n), "repeat_n": repeat_n(predictions, n)}
