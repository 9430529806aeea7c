"""SQuAD exact match and F1 (official v1.1/v2.0 normalisation) as an ``evaluate`` metric.

The definition is the row "squad" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class Squad(table.TableMetric):
    metric = "squad"
