"""Binary ROC-AUC as an ``evaluate`` metric: megazoo.eval.metrics.roc_auc.

The definition is the row "roc_auc" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class RocAuc(table.TableMetric):
    metric = "roc_auc"
