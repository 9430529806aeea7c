"""Expected Maximum Toxicity and Toxicity Probability as an ``evaluate`` metric.

The definition is the row "toxicity" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class Toxicity(table.TableMetric):
    metric = "toxicity"
