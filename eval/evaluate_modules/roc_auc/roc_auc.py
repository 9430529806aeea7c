"""Binary ROC-AUC as an ``evaluate`` metric: megazoo.eval.metrics.roc_auc."""
import datasets
import evaluate

from megazoo.eval.metrics import roc_auc

_DESCRIPTION = "Area under the ROC curve of scores against binary labels (ties count one half)."
_KWARGS = """
Args:
    predictions: scores, higher meaning more likely positive (e.g. normalised p("Yes")).
    references: binary gold labels (0/1).
Returns:
    roc_auc: float in [0, 1].
"""


class RocAuc(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation="Hanley and McNeil 1982, The meaning and use of the area under a ROC curve.",
            inputs_description=_KWARGS,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("float64"),
                    "references": datasets.Value("int64"),
                }
            ),
        )

    def _compute(self, predictions, references):
        return {"roc_auc": roc_auc(predictions, references)}
