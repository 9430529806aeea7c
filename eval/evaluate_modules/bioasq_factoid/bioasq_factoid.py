"""BioASQ factoid strict/lenient accuracy and MRR as an ``evaluate`` metric.

The definition is the row "bioasq_factoid" of megazoo.eval.evaluate_modules.table; this file exists so that
``evaluate.load(<this folder>)`` finds a script offline (evaluate names the metric after the class).
"""
from megazoo.eval.evaluate_modules import table


class BioasqFactoid(table.TableMetric):
    metric = "bioasq_factoid"
