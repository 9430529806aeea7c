"""ROUGE-L (rouge-score) as an ``evaluate`` metric: megazoo.eval.metrics.rouge_l.

The definition is the row "rouge_l" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class RougeL(table.TableMetric):
    metric = "rouge_l"
