"""Accuracy as an ``evaluate`` metric: megazoo.eval.metrics.accuracy (fraction of exact matches).

The definition is the row "accuracy" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class Accuracy(table.TableMetric):
    metric = "accuracy"
