"""Perplexity from summed NLL and token counts as an ``evaluate`` metric.

The definition is the row "perplexity" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class Perplexity(table.TableMetric):
    metric = "perplexity"
