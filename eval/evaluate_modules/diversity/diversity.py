"""distinct-n and repeat-n of generations as an ``evaluate`` metric.

The definition is the row "diversity" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class Diversity(table.TableMetric):
    metric = "diversity"
